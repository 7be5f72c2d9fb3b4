//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/landlock"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Launch modes, as reported in enforcement.launch.
const (
	LaunchThread = "thread"
	LaunchStage  = "stage"
	LaunchDirect = "direct"
)

// Plan is a Policy compiled for this kernel: the exact rules, namespaces and
// launch mode one call gets.
type Plan struct {
	Policy policy.Policy
	Launch string
	// StageSpec is the part of the plan the launch applies inside the
	// command's namespaces: a stage receives it alone (stagePayload).
	StageSpec
	Seccomp []seccomp.SeccompRule `json:"-"`
	Sockets seccomp.SocketPolicy
	// Proxy: network by domain (Policy.Domains). The launcher makes the
	// proxy's listening sockets inside the call's network namespace and sbx
	// serves them from its own (proxy.go).
	Proxy bool `json:",omitempty"`
	// NewUserNS: the namespaces are created inside a new user namespace
	// (unprivileged caller); this needs the stage launch.
	NewUserNS bool
	// ServerUserNS: the call's namespaces are made inside the user
	// namespace the unprivileged sbx serve made at start-up, one for all
	// its calls (System.ServerUserNS), by a thread launch.
	ServerUserNS bool `json:",omitempty"`
	// Creds are the command's credentials the supervisor checks a write
	// the policy allows with (rootaccess.go); nil: no check.
	Creds        *supervise.Creds `json:"-"`
	credsCanKeep bool
	// Watched are the missing carve-outs that get no placeholder, so that
	// the command sees them as missing, as it does bare: the supervisor
	// refuses creating one and reports it (best effort during the call),
	// and Wait, once the command's tree is dead, removes whichever
	// appeared anyway and reports it (sweep.go): none survives the call.
	Watched []string `json:",omitempty"`
	// MaskedLinks are the files under MaskedMounts that have names no mask
	// covers (hard links made earlier), which only the supervisor refuses,
	// best effort (maskinode.go); maskedInodes indexes them by inode.
	MaskedLinks  []supervise.MaskedLink `json:",omitempty"`
	maskedInodes map[supervise.DevIno]int
	// Devices are the device files the command may write: the policy's and
	// the terminals behind sbx's standard streams, resolved.
	Devices []string
	// Limits are the call's resource limits; Cgroup and Rlimits are what
	// enforces them (cgroup.go), LimitMechanism says which in the report.
	Limits         report.Limits
	Cgroup         *CgroupPlan `json:",omitempty"`
	LimitMechanism string      `json:",omitempty"`
	Downgrades     []report.Downgrade
	// unsupervised holds, by index into Downgrades, what a downgrade that
	// counts on the supervisor says without it.
	unsupervised map[int]report.Downgrade
	// unsupervisedOnly are downgrades that only a plan without the
	// supervisor has: what it enforces by itself, race-free.
	unsupervisedOnly []report.Downgrade
	// supervisorFeatures name those downgrades' features.
	supervisorFeatures []report.Feature
}

// StageSpec is what of a Plan a launch applies in the command's own
// process: its namespaces, mounts, capabilities, Landlock ruleset, seccomp
// filter and rlimits. It is a struct of its own so that the stage gets all
// of it and nothing else (stagePayload): decoding a whole Plan (the
// policy, every downgrade's text) cost a stage ~0.7 ms before its first
// step, mostly building JSON decoders for types it never uses. A field
// added here reaches the stage with no other change (TestStageSpecRoundTrip
// fails on one that does not survive the payload's JSON).
type StageSpec struct {
	// NewNetNS: a private network namespace with only loopback up.
	NewNetNS bool `json:",omitempty"`
	// NewPIDNS: the command runs in a new PID namespace whose init dies with
	// sbx, taking every process of the call with it.
	NewPIDNS bool `json:",omitempty"`
	// NewUTSNS and NewIPCNS: the command's hostname and System V IPC
	// objects are its own.
	NewUTSNS bool `json:",omitempty"`
	NewIPCNS bool `json:",omitempty"`
	// PrivateProc: /proc is a procfs of the call's PID namespace (host
	// processes, sbx's own environment among them, are not there), with
	// /proc/sys and the other machine-wide parts read-only (procReadOnly).
	PrivateProc bool `json:",omitempty"`
	// Capabilities are the capabilities the command keeps (--cap-add);
	// every other one is dropped from every set, the bounding set
	// included, and the securebits are locked (caps.go).
	Capabilities []int `json:",omitempty"`
	// Placeholders are carve-outs that do not exist yet (a missing .git in
	// a writable root) that the kernel is to keep from being created: Start
	// creates each as an empty directory, which is bind-mounted read-only
	// like ReadOnlyMounts, so the command cannot create it (EROFS), remove
	// it or mount over it (EBUSY, EPERM), and removes it after the call if
	// it is still empty. Only where the supervisor cannot stand in for
	// them, or the caller requires carve-out-create: the command sees a
	// .git that is not there bare (Go's -buildvcs=auto then runs git,
	// which fails "not a git repository", with no denial to say why).
	Placeholders []string `json:",omitempty"`
	// ReadOnlyMounts are existing carve-outs bind-mounted read-only in a
	// private mount namespace.
	ReadOnlyMounts []string `json:",omitempty"`
	// ReadOnlyRoot: every mount of the call's mount namespace is made
	// read-only except the writable roots and the mounts below them, which
	// keep their flags (bwrap's --ro-bind / / --bind W W; see readOnlyRoot).
	// Device files are not covered: a read-only mount still opens them for
	// writing.
	ReadOnlyRoot bool `json:",omitempty"`
	// WriteRoots are the policy's writable roots (Policy.WriteRoots), the
	// mounts ReadOnlyRoot leaves writable.
	WriteRoots []string `json:",omitempty"`
	// MaskedMounts are existing paths the guard forbids reading, hidden under
	// an empty read-only tmpfs (directories) or /dev/null (files).
	MaskedMounts []string          `json:",omitempty"`
	Landlock     *landlock.Ruleset `json:",omitempty"`
	// Supervise says whether the seccomp supervisor runs (supervisor/supervise.go).
	Supervise   Supervise
	SeccompProg seccomp.BPFProgram
	// SeccompPlainProg is the filter without its user-notification rules,
	// loaded instead when no listener can be had at launch (Supervise is
	// SuperviseBestEffort).
	SeccompPlainProg seccomp.BPFProgram `json:",omitempty"`
	// Rlimits stand in for the cgroup controllers a stage cannot write
	// (setLimits, cgroup.go); the stage's limit shim sets them (rlimit.go).
	Rlimits []Rlimit `json:",omitempty"`
}

// Supervise is whether the seccomp supervisor runs for a plan.
type Supervise int

const (
	// SuperviseOff: no supervisor; denials are not reported.
	SuperviseOff Supervise = iota
	// SuperviseBestEffort: run it; if the listener cannot be had at launch,
	// run without and report a "denial-reports" downgrade.
	SuperviseBestEffort
	// SuperviseRequired: run it, or fail the launch (--require denial-reports).
	SuperviseRequired
)

// Options are what a call adds to its policy's plan.
type Options struct {
	// Limits are the call's resource limits (setLimits decides what
	// enforces each).
	Limits report.Limits
	// NoDenialReports runs without the seccomp supervisor: nothing the
	// sandbox blocks is reported.
	NoDenialReports bool
	// Require are the features the call may not run without; where only
	// the supervisor gives one, the supervisor becomes required.
	Require []report.Feature
	// Cwd is the command's working directory: inside a writable root, it
	// is checked as one (rootaccess.go).
	Cwd string
	// Streams are the command's stdin, stdout and stderr: a terminal
	// behind one stays open to it (terminalPaths). Nil ones are skipped.
	Streams [3]*os.File
}

// Compile turns pol into a Plan for sys and the call's opts; nothing
// changes the plan after it. It fails only on an internal error; whatever
// the kernel lacks becomes a Downgrade.
func Compile(pol policy.Policy, sys System, opts Options) (*Plan, error) {
	p, err := compile(pol, sys, opts)
	if err != nil {
		return nil, err
	}
	p.setLimits(opts.Limits)
	p.compileCwdAccess(opts.Cwd)
	if opts.NoDenialReports {
		p.withoutSupervisor()
	}
	if slices.Contains(opts.Require, report.FeatureDenialReports) && p.Supervise != SuperviseOff {
		p.Supervise = SuperviseRequired
	}
	p.requireSupervisorFor(opts.Require)
	return p, nil
}

// compile is Compile for the policy, with what of opts decides the
// carve-outs' protection.
func compile(pol policy.Policy, sys System, opts Options) (*Plan, error) {
	p := &Plan{Policy: pol, Launch: LaunchThread, ServerUserNS: sys.ServerUserNS}
	p.WriteRoots = pol.WriteRoots
	if pol.Unrestricted {
		p.Launch = LaunchDirect
		return p, nil
	}
	if err := p.compileCapabilities(sys); err != nil {
		return nil, err
	}
	p.compileRootAccess(sys)
	sup := seccomp.NotifyNone
	if sys.UserNotif {
		p.Supervise, sup = SuperviseBestEffort, seccomp.NotifyWrites
	} else {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureDenialReports,
			Reason: sys.UserNotifReason + ": operations the sandbox blocks are not reported" + seccomp.UnsupervisedSetgid})
	}
	// Every sandboxed call gets a PID namespace, so that the whole tree dies
	// with sbx; hence namespaces are always needed.
	needNS := sys.Privileged || sys.UserNS
	// The kernel's wall for a missing carve-out (a placeholder) where
	// nothing else stands for it, or the caller requires it.
	// So also where the call has no PID namespace (compileNamespaces): its
	// tree could outlive Wait, which then cannot remove what it made
	// without a race.
	noPIDNS := sys.Privileged && runtime.GOARCH != "amd64"
	wall := p.Supervise == SuperviseOff || opts.NoDenialReports || slices.Contains(opts.Require, report.FeatureCarveOutCreate) || noPIDNS
	masked := p.compileCarveOuts(needNS, wall)
	p.compileNamespaces(sys)
	p.compileMaskLinks(masked)
	p.compileNetwork(sys, needNS)
	p.NewUTSNS, p.NewIPCNS = needNS, needNS
	p.compileProc(sys, needNS)
	p.compileDenyGlobs(pol)
	if err := p.compileSeccomp(sup); err != nil {
		return nil, err
	}
	ttys := terminalPaths(opts.Streams)
	if pol.Terminal != "" {
		ttys = []string{pol.Terminal}
	}
	p.Devices = resolveAll(append(slices.Clone(pol.Devices), ttys...))
	p.compileLandlock(sys.LandlockABI, needNS)
	p.compileAttributes(needNS)
	return p, nil
}

// compileSeccomp builds the filter: sup says which calls go to the
// supervisor (reads too where a read can be a denial), and the plain
// program is the same table without the supervisor, for a launch that
// cannot have one.
func (p *Plan) compileSeccomp(sup seccomp.NotifyScope) error {
	if sup == seccomp.NotifyWrites && (p.reportedMasks() || len(p.MaskedLinks) > 0 || supervise.HasReadGlobs(p.Policy)) {
		// Reads are supervised only where a read can be a denial: a path
		// the mount namespace hides (without one, the mask downgrade says
		// it stays readable, so its reads are no denials) and whose reads
		// are reported, or a hard link of a hidden file, which only the
		// supervisor keeps closed.
		sup = seccomp.NotifyReads
	}
	f, err := seccompFilters(p.Sockets, sup)
	if err != nil {
		return err
	}
	p.Seccomp, p.SeccompProg, p.SeccompPlainProg = f.table, f.prog, f.plain
	return nil
}

// reportedMasks says whether a mounted mask's reads are reported: one
// that is not in Policy.Unreported (sbx serve's state directory is, and a
// server's every call would otherwise pay a supervised open).
func (p *Plan) reportedMasks() bool {
	for _, m := range p.MaskedMounts {
		if !slices.Contains(p.Policy.Unreported, m) {
			return true
		}
	}
	return false
}

// seccompFilter is what compileSeccomp makes of one (sockets, scope).
type seccompFilter struct {
	table       []seccomp.SeccompRule
	prog, plain seccomp.BPFProgram
}

// seccompCache keeps each (sockets, scope)'s filter once compiled: the
// table and programs are a pure function of the two (a few kinds in all),
// and building them was a third of a plan's compile in a server's CPU
// profile (#31). Plans share the slices: nothing writes them after this.
// It is data, not isolation: each call still loads the filter into its own
// thread.
var seccompCache sync.Map // seccompKey -> *seccompFilter

type seccompKey struct {
	sockets seccomp.SocketPolicy
	sup     seccomp.NotifyScope
}

// seccompFilters returns the filter of (sockets, sup), compiled once.
func seccompFilters(sockets seccomp.SocketPolicy, sup seccomp.NotifyScope) (*seccompFilter, error) {
	key := seccompKey{sockets, sup}
	if f, ok := seccompCache.Load(key); ok {
		return f.(*seccompFilter), nil
	}
	f := &seccompFilter{table: seccomp.SeccompTable(sockets, sup)}
	var ok bool
	if f.prog, f.plain, ok = seccomp.Precompiled(sockets, sup); !ok {
		var err error
		if f.prog, f.plain, err = seccomp.Programs(f.table, sockets, sup); err != nil {
			return nil, err
		}
	}
	seccompCache.Store(key, f)
	return f, nil
}

// compileAttributes: with a mount namespace every mount outside the
// writable roots is read-only, which also covers what Landlock has no right
// for; without one, that is a downgrade.
func (p *Plan) compileAttributes(needNS bool) {
	// Read-only mounts are the second wall beside Landlock: Landlock has
	// no access right for a file's attributes (chmod, chown, utimes,
	// extended attributes: ACLs and file capabilities are xattrs, inode
	// flags), a read-only mount refuses them all (EROFS).
	p.ReadOnlyRoot = needNS
	if !p.ReadOnlyRoot {
		// IMPORTANT: without a mount namespace, outside the writable roots
		// only the supervisor (chmod, chown: best effort) or nothing
		// (utimes, extended attributes) stands in the way.
		p.degrade(report.FeatureFileAttributes,
			"Landlock has no right for file attributes: chmod, chown, utimes and extended attributes outside the writable roots are not restricted",
			"Landlock has no right for file attributes: chmod and chown outside the writable roots are refused only by the seccomp supervisor, best effort; utimes and extended attributes are not restricted")
	}
}

// resolveAll resolves symlinks in each path that exists and drops
// duplicates; a path that cannot be resolved is kept as it is.
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Degraded is what the plan could not apply: its Downgrades.
func (p *Plan) Degraded() []report.Downgrade { return p.Downgrades }

// Enforcement describes the plan as applied, for the report.
func (p *Plan) Enforcement() report.Enforcement {
	e := report.Enforcement{Platform: "linux", Launch: p.Launch, NoNewPrivs: true, NewSession: true,
		ParentDeathKill: true, ClosedFDs: true}
	if p.Launch == LaunchDirect {
		// The unprivileged server has the outer sbx serve launch it, in
		// the user's own namespace (serveuserns_direct.go). IMPORTANT:
		// except with a call cgroup (delegated cgroups), which the outer
		// cannot join: then it runs in the server's user namespace, where
		// root's files show as the overflow uid, and setuid-root programs
		// and file capabilities do not take effect (they do under sbx run).
		e.UserNamespace = p.ServerUserNS && !launchesOutside(p)
		return e
	}
	e.NetworkNamespace = p.NewNetNS
	e.NetworkDomains = p.Proxy
	e.MountNamespace = p.needsMountNS()
	e.MaskedPaths = p.MaskedMounts
	e.UserNamespace = p.NewUserNS || p.ServerUserNS
	e.PIDNamespace = p.NewPIDNS
	e.UTSNamespace, e.IPCNamespace = p.NewUTSNS, p.NewIPCNS
	e.ReadOnlyRoot = p.ReadOnlyRoot
	e.ReadOnlyMounts = append(slices.Clone(p.ReadOnlyMounts), p.Placeholders...)
	e.Procfs = "host"
	if p.PrivateProc {
		e.Procfs = "private"
	}
	e.CapabilitiesDropped = true
	for _, c := range p.Capabilities {
		e.Capabilities = append(e.Capabilities, CapabilityName(c))
	}
	e.Seccomp = &report.SeccompInfo{Sockets: p.Sockets.String(), Rules: len(p.Seccomp)}
	if lp := p.Landlock; lp != nil {
		// The rights after ABI 1 the plan handles, and its scopes, spelt
		// as internal/landlock's table spells them: a right added there
		// is named here with no other change.
		later := lp.HandledFS &^ landlock.Mask(landlock.FS, 1, landlock.Always)
		li := &report.LandlockInfo{ABI: lp.ABI, FS: true, NetTCP: lp.HandledNet != 0, Rules: len(lp.Rules),
			Scopes: landlock.NameList(landlock.Scope, lp.Scoped), Features: landlock.NameList(landlock.FS, later)}
		e.Landlock = li
	}
	return e
}

// needsMountNS reports whether the plan changes mounts (MountOps is not
// empty), which needs a private mount namespace. It is asked several
// times per call, so it reads the fields MountOps makes steps of rather
// than making them (TestNeedsMountNS holds the two together).
func (s *StageSpec) needsMountNS() bool {
	return s.ReadOnlyRoot || len(s.ReadOnlyMounts) > 0 || s.PrivateProc || len(s.Placeholders) > 0 || len(s.MaskedMounts) > 0
}

// pathOpens reports whether path can be opened as Landlock's rules open
// it (O_PATH: no read permission needed).
func pathOpens(path string) bool {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
