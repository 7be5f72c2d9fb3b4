package windows

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enum"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Launch modes, as reported in enforcement.launch.
const (
	// LaunchRestrictedToken runs the command with the plan's write-restricted
	// token inside the plan's job.
	LaunchRestrictedToken = "restricted-token"
	// LaunchDirect runs the command with sbx's own token inside the job
	// (danger-full-access).
	LaunchDirect = "direct"
)

// Access rights of file objects (winnt.h), spelled here so the plan is pure
// Go that builds and tests on every OS.
const (
	fileReadData        = 0x0001
	fileWriteData       = 0x0002 // FILE_ADD_FILE on a directory
	fileAppendData      = 0x0004 // FILE_ADD_SUBDIRECTORY on a directory
	fileReadEA          = 0x0008
	fileWriteEA         = 0x0010
	fileExecute         = 0x0020
	fileDeleteChild     = 0x0040
	fileReadAttributes  = 0x0080
	fileWriteAttributes = 0x0100
	accessDelete        = 0x00010000
	readControl         = 0x00020000
	writeDAC            = 0x00040000
	writeOwner          = 0x00080000
	synchronize         = 0x00100000
)

// GrantMask is what the call SID gets on a writable root and everything
// below it.
//
// It leaves out FILE_DELETE_CHILD: with it, a root's grant would let the
// command delete a carve-out through its parent whatever the carve-out's own
// ACL says. Deleting a file then takes DELETE on the file itself, which the
// inherited grant gives. WRITE_DAC and WRITE_OWNER are left out so the
// command cannot rewrite the ACLs that confine it.
const GrantMask = fileReadData | fileWriteData | fileAppendData | fileReadEA | fileWriteEA |
	fileExecute | fileReadAttributes | fileWriteAttributes | accessDelete | readControl | synchronize

// DenyMask is what the call SID is refused on a read-only carve-out: every
// way to change, delete or re-permission it.
const DenyMask = fileWriteData | fileAppendData | fileWriteEA | fileWriteAttributes |
	fileDeleteChild | accessDelete | writeDAC | writeOwner

// EveryoneSID is the well-known SID of Everyone.
const EveryoneSID = "S-1-1-0"

// LogonSID stands for the logon session's SID, looked up in sbx's token at
// launch; the plan names it without knowing its value.
const LogonSID = "logon"

// ACEKind says whether an ACE allows or denies.
type ACEKind int

const (
	// Allow is an ACCESS_ALLOWED ACE.
	Allow ACEKind = iota
	// Deny is an ACCESS_DENIED ACE; Windows orders explicit denies first.
	Deny
)

var aceKindNames = enum.Names[ACEKind]{Type: "ACEKind", What: "ACE kind", Names: []string{"allow", "deny"}}

func (k ACEKind) String() string { return aceKindNames.String(k) }

func (k ACEKind) MarshalText() ([]byte, error) { return aceKindNames.Marshal(k) }

// Inheritance says which objects below a path an ACE reaches.
type Inheritance int

const (
	// InheritNone: the path itself (a file).
	InheritNone Inheritance = iota
	// InheritTree: the directory, its subdirectories and files
	// (SUB_CONTAINERS_AND_OBJECTS_INHERIT).
	InheritTree
)

var inheritanceNames = enum.Names[Inheritance]{Type: "Inheritance", What: "inheritance", Names: []string{"object", "tree"}}

func (i Inheritance) String() string { return inheritanceNames.String(i) }

func (i Inheritance) MarshalText() ([]byte, error) { return inheritanceNames.Marshal(i) }

// ACE is one access-control entry for the call SID that the launch adds to
// a path's DACL and removes after the call.
type ACE struct {
	Path    string
	Kind    ACEKind
	Mask    uint32
	Inherit Inheritance
}

// Job is the job object the call's process tree runs in.
type Job struct {
	// ActiveProcessLimit caps the processes alive at once (0: no cap).
	ActiveProcessLimit uint32
	// JobMemoryLimit caps the committed memory of the whole tree in bytes
	// (0: no cap).
	JobMemoryLimit uint64
}

// Job limit flags (winnt.h JOB_OBJECT_LIMIT_*).
const (
	jobLimitActiveProcess           = 0x00000008
	jobLimitJobMemory               = 0x00000200
	jobLimitDieOnUnhandledException = 0x00000400
	jobLimitKillOnJobClose          = 0x00002000
)

// UIRestrictions is the job's JOBOBJECT_BASIC_UI_RESTRICTIONS, the same for
// every call (winnt.h JOB_OBJECT_UILIMIT_*): the command shares the desktop
// of the person running sbx, so without them it could drive that person's
// windows (USER handles of processes outside the job), read or replace the
// clipboard, change system parameters and display settings, switch
// desktops, or log the session off.
//
// IMPORTANT: window messages to other processes' windows are not all
// blocked by a job: a separate desktop would be needed, and sbx does not
// make one.
const UIRestrictions = 0x01 | // HANDLES: no USER handles of processes outside the job
	0x02 | 0x04 | // READCLIPBOARD, WRITECLIPBOARD
	0x08 | // SYSTEMPARAMETERS
	0x10 | // DISPLAYSETTINGS
	0x20 | // GLOBALATOMS: a private atom table
	0x40 | // DESKTOP: no new or switched desktops
	0x80 // EXITWINDOWS

// LimitFlags is the job's JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags.
// JOB_OBJECT_LIMIT_BREAKAWAY_OK and SILENT_BREAKAWAY_OK are never set: a
// process of the call cannot leave the job, even with
// CREATE_BREAKAWAY_FROM_JOB.
func (j Job) LimitFlags() uint32 {
	f := uint32(jobLimitKillOnJobClose | jobLimitDieOnUnhandledException)
	if j.ActiveProcessLimit > 0 {
		f |= jobLimitActiveProcess
	}
	if j.JobMemoryLimit > 0 {
		f |= jobLimitJobMemory
	}
	return f
}

// Plan is a Policy compiled for Windows: the job, the token's restricting
// SIDs and the ACEs one call needs.
type Plan struct {
	Policy policy.Policy
	Launch string
	// CallSID is the random SID of this call: the token restricts writes to
	// it, and the ACEs grant and deny it.
	CallSID string `json:",omitempty"`
	// RestrictingSIDs are the token's restricting SIDs, in order.
	RestrictingSIDs []string `json:",omitempty"`
	Job             Job
	// ACEs are applied in order and removed in reverse order.
	ACEs       []ACE `json:",omitempty"`
	Downgrades []report.Downgrade
}

// Options are what Compile needs beyond the Policy.
type Options struct {
	// CallSID is this call's SID; NewCallSID makes one.
	CallSID string
	// Limits are the call's resource limits, enforced by the job.
	Limits report.Limits
}

// jobFor turns limits into the job's: the process cap and the tree's
// committed memory. A job has no way to cap threads, so pids counts
// processes only (on Linux it counts threads too).
//
// IMPORTANT: cpus is not enforced yet (JOB_OBJECT_CPU_RATE_CONTROL is not
// set): it is a "limits" Downgrade.
func jobFor(l report.Limits) (Job, []report.Downgrade) {
	j := Job{ActiveProcessLimit: uint32(l.Pids), JobMemoryLimit: uint64(l.MemoryBytes)}
	if l.CPUs > 0 {
		return j, []report.Downgrade{{Feature: report.FeatureLimits,
			Reason: "the job object's CPU rate control is not used yet: cpus is not enforced on windows"}}
	}
	return j, nil
}

// NewCallSID returns a fresh SID for one call, read from r (crypto/rand in
// production): S-1-5-21- and four random sub-authorities, the shape of a
// domain SID, which no account on the machine has.
func NewCallSID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("call sid: %w", err)
	}
	return fmt.Sprintf("S-1-5-21-%d-%d-%d-%d", binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[4:]),
		binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])), nil
}

// DefaultOptions returns options with a fresh call SID and no job limits.
func DefaultOptions() (Options, error) {
	sid, err := NewCallSID(rand.Reader)
	return Options{CallSID: sid}, err
}

// Gaps of the mechanism, reported for every restricted launch.
var (
	// IMPORTANT: Everyone is a restricting SID (without it consoles, pipes
	// and devices such as NUL refuse the command's writes), so anything
	// whose ACL lets Everyone write stays writable outside the roots.
	everyoneWritable = report.Downgrade{Feature: report.FeatureEveryoneWritable,
		Reason: "files and directories whose ACL lets Everyone write stay writable outside the writable roots"}
	// IMPORTANT: no denial evidence is collected on Windows (no audit of
	// access checks is read), so blocked writes fail without a report.
	noDenials = report.Downgrade{Feature: report.FeatureDenialReports,
		Reason: "no access-check audit is read on windows: operations the sandbox blocks are not reported"}
	// IMPORTANT: no AppContainer or firewall rule is used yet.
	noNetwork = report.Downgrade{Feature: report.FeatureNetNS,
		Reason: "network is not isolated on windows (no AppContainer or firewall rule yet): the command has the host's network"}
	// IMPORTANT: reads are checked against the token's normal SIDs only; a
	// deny-read ACE for the call SID would not apply.
	noMask = report.Downgrade{Feature: report.FeatureMask,
		Reason: "a write-restricted token restricts writes only: masked paths stay readable"}
)

// Compile turns pol into a Plan. Every writable root must exist (the Policy
// guarantees it); it fails when one cannot be examined.
//
// Downgrades: limits when cpus is set (in every mode: the job holds
// danger-full-access calls too); everyone-writable and denial-reports for
// every restricted launch; netns when the
// policy isolates the network; mask when it masks paths; carve-out-create
// for carve-outs that do not exist yet (an ACE needs an object, so nothing
// stops the command creating them). The policy's Devices need no ACE: NUL
// and the console are writable through the Everyone restricting SID.
func Compile(pol policy.Policy, opts Options) (*Plan, error) {
	p := &Plan{Policy: pol, Launch: LaunchDirect}
	p.Job, p.Downgrades = jobFor(opts.Limits)
	if pol.Unrestricted {
		return p, nil
	}
	if opts.CallSID == "" {
		return nil, fmt.Errorf("compile: no call sid")
	}
	p.Launch, p.CallSID = LaunchRestrictedToken, opts.CallSID
	p.RestrictingSIDs = []string{opts.CallSID, EveryoneSID, LogonSID}
	for _, root := range pol.WriteRoots {
		fi, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("compile write_roots: %w", err)
		}
		p.ACEs = append(p.ACEs, ACE{Path: root, Kind: Allow, Mask: GrantMask, Inherit: inheritance(fi)})
	}
	var missing []string
	for _, ro := range pol.CarveOuts {
		fi, err := os.Stat(ro)
		if err != nil {
			missing = append(missing, ro)
			continue
		}
		p.ACEs = append(p.ACEs, ACE{Path: ro, Kind: Deny, Mask: DenyMask, Inherit: inheritance(fi)})
	}
	p.Downgrades = append(p.Downgrades, everyoneWritable, noDenials)
	if pol.Domains != nil {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetworkDomains,
			Reason: "network by domain is not implemented on Windows: the network is not restricted (see netns)"})
	}
	if pol.Network == policy.NetworkIsolated {
		p.Downgrades = append(p.Downgrades, noNetwork)
	}
	if len(pol.Masked) > 0 {
		p.Downgrades = append(p.Downgrades, noMask)
	}
	p.Downgrades = append(p.Downgrades, denyGlobDowngrades(pol)...)
	if len(missing) > 0 {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureCarveOutCreate,
			Reason: "read-only carve-outs that do not exist yet can be created: " + strings.Join(missing, ", ")})
	}
	return p, nil
}

func inheritance(fi os.FileInfo) Inheritance {
	if fi.IsDir() {
		return InheritTree
	}
	return InheritNone
}

// Degraded is what the plan could not apply: its Downgrades.
func (p *Plan) Degraded() []report.Downgrade { return p.Downgrades }

// Enforcement describes the plan as applied, for the report. The job kills
// the tree when sbx's handle closes, so parent-death kill holds even when sbx
// itself is killed.
func (p *Plan) Enforcement() report.Enforcement {
	return report.Enforcement{Platform: "windows", Launch: p.Launch, NewSession: true, ParentDeathKill: true, ClosedFDs: true}
}

// String renders the plan as stable text for `sbx explain` and golden tests.
// The call SID is random per call, so it is printed as "call".
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nlaunch: %s\n", p.Policy.Mode, p.Launch)
	fmt.Fprintf(&b, "job: limit_flags=%#x ui_restrictions=%#x active_processes=%d job_memory=%d breakaway=forbidden\n",
		p.Job.LimitFlags(), UIRestrictions, p.Job.ActiveProcessLimit, p.Job.JobMemoryLimit)
	if p.Launch == LaunchDirect {
		b.WriteString("no restrictions (danger-full-access): sbx's own token, no ACEs\n")
	} else {
		sids := make([]string, len(p.RestrictingSIDs))
		for i, s := range p.RestrictingSIDs {
			sids[i] = strings.Replace(s, p.CallSID, "call", 1)
		}
		fmt.Fprintf(&b, "token: write-restricted, max privileges disabled, restricting sids: %s\n", strings.Join(sids, " "))
		fmt.Fprintf(&b, "network: %s\n", p.Policy.Network)
		for _, a := range p.ACEs {
			fmt.Fprintf(&b, "ace: %s call %#x %s %s\n", a.Kind, a.Mask, a.Inherit, a.Path)
		}
	}
	for _, d := range p.Downgrades {
		fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
	}
	return b.String()
}
