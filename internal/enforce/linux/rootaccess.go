//go:build linux

package linux

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
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

// probeCreds are sbx's own credentials, which the command keeps (root's
// thread launch changes no id), when sbx runs as root; nil else. Only
// root's command loses what it has bare (CAP_DAC_OVERRIDE, CAP_FOWNER): an
// unprivileged caller's command is refused by file permissions exactly
// where the caller is, which is no sandbox's doing.
func probeCreds() *supervise.Creds {
	if os.Geteuid() != 0 {
		return nil
	}
	c := &supervise.Creds{UID: uint32(os.Geteuid()), GIDs: []uint32{uint32(os.Getegid())}}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if !slices.Contains(c.GIDs, uint32(g)) {
			c.GIDs = append(c.GIDs, uint32(g))
		}
	}
	return c
}

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
	if !p.Creds.Permitted(&st, want) {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureRootAccess, Reason: p.dacReason(root, &st, unix.CAP_DAC_OVERRIDE, "cannot write it, and the kernel refuses the command's writes there (EACCES)")})
	}
}

// dacReason is the reason of a downgrade or a denial caused by file
// permissions: the object's owner and mode, the command's credentials, and
// the capability that would let it through; report.NeededCapability reads
// that capability back for the retry.
func (p *Plan) dacReason(path string, st *unix.Stat_t, cap int, what string) string {
	return supervise.DacReason(*p.Creds, p.credsCanKeep, path, st, cap, what)
}

// rootAccessCheck is doctor's writable-root-access line: whether the
// command's credentials can write the current directory (a workspace is
// usually where doctor is run), which only root's command can fail to
// where root bare would not.
func rootAccessCheck(sys System) report.Check {
	c := report.Check{Feature: report.FeatureRootAccess, Available: true,
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
