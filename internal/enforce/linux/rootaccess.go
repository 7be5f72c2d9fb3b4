//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file makes visible what the dropped capabilities cost a caller whose
// writable roots belong to another uid: root in a container over a volume
// owned by uid 1000 gives its command no CAP_DAC_OVERRIDE, so the kernel
// refuses the command's writes inside its own writable root (EACCES) though
// no rule of sbx does. The capabilities stay dropped; the compile-time
// check names each such root (a writable-root-access downgrade, in the
// report, explain and doctor), and the supervisor reports each refused
// write there with the capability that would let it through (cap_add), as
// an inferred denial: it sees the call before the kernel's permission
// check, so it runs that check itself, with the command's credentials.
//
// IMPORTANT: the check reads owner, group and mode bits only. A POSIX ACL
// (system.posix_acl_access) can grant or refuse more than the bits say, so
// a root an ACL makes writable is still named, and a write an ACL refuses
// is not reported. The kernel decides either way; the check only explains.

// Creds are the command's credentials for file permission checks: its uid
// (fsuid) and groups. The command holds no capability (but those
// Plan.Capabilities keeps), so only the mode bits decide.
type Creds struct {
	UID  uint32
	GIDs []uint32
}

// probeCreds are sbx's own credentials, which the command keeps (root's
// thread launch changes no id), when sbx runs as root; nil else. Only
// root's command loses what it has bare (CAP_DAC_OVERRIDE, CAP_FOWNER): an
// unprivileged caller's command is refused by file permissions exactly
// where the caller is, which is no sandbox's doing.
func probeCreds() *Creds {
	if os.Geteuid() != 0 {
		return nil
	}
	c := &Creds{UID: uint32(os.Geteuid()), GIDs: []uint32{uint32(os.Getegid())}}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if !slices.Contains(c.GIDs, uint32(g)) {
			c.GIDs = append(c.GIDs, uint32(g))
		}
	}
	return c
}

// permitted reports whether c may access st with the rights of want
// (a mix of unix.W_OK, unix.X_OK, unix.R_OK) by its mode bits: the owner's
// bits for the owner, the group's for a member, the others' else, as the
// kernel's generic_permission does without capabilities.
func (c Creds) permitted(st *unix.Stat_t, want uint32) bool {
	bits := st.Mode & 0o7
	switch {
	case st.Uid == c.UID:
		bits = st.Mode >> 6 & 0o7
	case slices.Contains(c.GIDs, st.Gid):
		bits = st.Mode >> 3 & 0o7
	}
	return bits&want == want
}

func (c Creds) String() string { return fmt.Sprintf("uid %d, gids %v", c.UID, c.GIDs) }

// keeps reports whether the plan keeps capability cap for the command.
func (p *Plan) keeps(cap int) bool { return slices.Contains(p.Capabilities, cap) }

// compileRootAccess names each writable root the command's credentials
// cannot write (a directory needs write and search, a file write), as a
// writable-root-access downgrade, and gives the supervisor the
// credentials to check writes with. Nothing when the system has no
// credentials (a test's System) or the command keeps CAP_DAC_OVERRIDE.
func (p *Plan) compileRootAccess(sys System) {
	if sys.Creds == nil || p.keeps(unix.CAP_DAC_OVERRIDE) {
		return
	}
	p.Creds = sys.Creds
	// Root in a container without CAP_SYS_ADMIN, or the unprivileged sbx
	// serve's namespace: the command cannot keep a capability.
	p.credsCanKeep = sys.Privileged && !sys.ServerUserNS
	for _, root := range p.Policy.WriteRoots {
		p.checkRootAccess(root)
	}
}

// compileCwdAccess checks the working directory as a writable root when
// it lies inside one (a workspace below /tmp is inside the root /tmp).
func (p *Plan) compileCwdAccess(cwd string) {
	if p.Creds == nil || cwd == "" || slices.Contains(p.Policy.WriteRoots, cwd) {
		return
	}
	for _, root := range p.Policy.WriteRoots {
		if strings.HasPrefix(cwd, strings.TrimSuffix(root, "/")+"/") {
			p.checkRootAccess(cwd)
			return
		}
	}
}

// checkRootAccess adds the downgrade for a root the command cannot write.
func (p *Plan) checkRootAccess(root string) {
	var st unix.Stat_t
	if unix.Stat(root, &st) != nil {
		return // a root that does not exist fails by itself
	}
	want := uint32(unix.W_OK)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		want |= unix.X_OK
	}
	if !p.Creds.permitted(&st, want) {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureRootAccess, Reason: p.dacReason(root, &st, unix.CAP_DAC_OVERRIDE, "cannot write it, and the kernel refuses the command's writes there (EACCES)")})
	}
}

// dacReason is the reason of a downgrade or a denial caused by file
// permissions: the object's owner and mode, the command's credentials, and
// the capability that would let it through; report.NeededCapability reads
// that capability back for the retry.
func (p *Plan) dacReason(path string, st *unix.Stat_t, cap int, what string) string {
	return dacReason(*p.Creds, p.credsCanKeep, path, st, cap, what)
}

// dacReason is Plan.dacReason for credentials cr; canKeep says whether a
// capability could be granted (compileCapabilities would refuse cap_add
// otherwise).
func dacReason(cr Creds, canKeep bool, path string, st *unix.Stat_t, cap int, what string) string {
	need := report.CapabilityReason(capName(cap))
	if !canKeep {
		need = report.NoCapabilityReason
	}
	return fmt.Sprintf("%s (owner uid %d, gid %d, mode %04o): the command (%s, no capability) %s; %s", path, st.Uid, st.Gid, st.Mode&0o7777, cr, what, need)
}

func capName(cap int) string {
	switch cap {
	case unix.CAP_DAC_OVERRIDE:
		return "CAP_DAC_OVERRIDE"
	case unix.CAP_FOWNER:
		return "CAP_FOWNER"
	}
	return fmt.Sprintf("capability %d", cap)
}

// dacDenied is the inferred denial of a write the policy allows but the
// command's credentials do not: op on path, which needs want on the object
// at check (the path itself, or the directory a name is made in or removed
// from); for a chmod, ownership (CAP_FOWNER). The call continues: the
// kernel refuses it by itself, and a race can only make the report wrong,
// never let anything through. ok is false when the check passes or cannot
// be made. known, when not nil, is the stat of check that resolving it
// already made (the common allowed write then costs no second stat).
func (s *supervisor) dacDenied(c call, op, path, check string, want uint32, known *unix.Stat_t) (decision, bool) {
	cr := s.in.Creds
	if cr == nil {
		return cont, false
	}
	var st unix.Stat_t
	if known != nil {
		st = *known
	} else if unix.Stat(check, &st) != nil {
		return cont, false
	}
	cap, what := unix.CAP_DAC_OVERRIDE, "cannot write it: the kernel refuses the call (EACCES)"
	switch {
	case op == "chmod":
		if st.Uid == cr.UID || s.in.keeps(unix.CAP_FOWNER) {
			return cont, false
		}
		cap, what = unix.CAP_FOWNER, "does not own it: the kernel refuses the chmod (EPERM)"
	case cr.permitted(&st, want):
		return cont, false
	case check != path:
		what = "cannot write this directory: the kernel refuses the call (EACCES)"
	}
	return decision{denials: []report.Denial{{Operation: op, Path: path, Syscall: c.name, PID: c.tid,
		Source: SupervisorSource, Confidence: Inferred, Count: 1, Reason: dacReason(*cr, s.in.CredsCanKeep, check, &st, cap, what)}}}, true
}

// entryDAC is dacDenied for a call the policy lets make or remove the name
// r: its directory must be writable and searchable. A call that fails by
// itself for another reason (EEXIST, ENOENT) is not reported.
func (s *supervisor) entryDAC(c call, op string, a denial.Access, r resolved) decision {
	switch a {
	case denial.Create, denial.MakeDevice:
		if r.exists {
			return cont
		}
	case denial.Remove, denial.RenameFrom:
		if !r.exists {
			return cont
		}
	default:
		return cont
	}
	if !s.check.Path(a, r.path).Allowed {
		return cont
	}
	d, _ := s.dacDenied(c, op, r.path, filepath.Dir(r.path), unix.W_OK|unix.X_OK, nil)
	return d
}

// rootAccessCheck is doctor's writable-root-access line: whether the
// command's credentials can write the current directory (a workspace is
// usually where doctor is run), which only root's command can fail to
// where root bare would not.
func rootAccessCheck(sys System) report.Check {
	c := report.Check{Feature: string(report.FeatureRootAccess), Available: true,
		Fallback: "the kernel refuses the command's writes there (EACCES); reported as degraded \"writable-root-access\" and, per refused write, an inferred denial whose retry keeps CAP_DAC_OVERRIDE (cap_add)"}
	if sys.Creds == nil {
		c.Detail = fmt.Sprintf("euid %d: the command has the caller's own file permissions, as without sbx", os.Geteuid())
		return c
	}
	wd, err := os.Getwd()
	if err != nil {
		c.Detail = "the current directory: " + err.Error()
		return c
	}
	p := &Plan{Creds: sys.Creds, credsCanKeep: sys.Privileged && !sys.ServerUserNS}
	p.checkRootAccess(wd)
	if len(p.Downgrades) > 0 {
		c.Available, c.Detail = false, p.Downgrades[0].Reason
		return c
	}
	c.Detail = fmt.Sprintf("root's command holds no CAP_DAC_OVERRIDE: a writable root another uid owns is refused by file permissions; the current directory %s is writable with the command's credentials (%s)", wd, *sys.Creds)
	return c
}
