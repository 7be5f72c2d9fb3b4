//go:build linux

package landlock

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileRights is FileRights, computed once: RestrictSelf masks every rule
// on a non-directory with it.
var fileRights = FileRights()

// RunningABI returns the Landlock ABI version of the running kernel, 0 when
// Landlock is not available (not built in, or not enabled in lsm=).
func RunningABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// rulesetAttr mirrors struct landlock_ruleset_attr up to the scoped field
// (ABI 6). The kernel accepts a longer struct than it knows as long as the
// tail is zero, so one layout serves every ABI.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// RestrictSelf builds the ruleset and restricts the calling thread. The caller must
// have locked the goroutine to its thread and set no_new_privs. Rules whose
// path cannot be opened (e.g. /dev/tty on a system without it) are skipped:
// skipping a rule only ever denies more.
//
// It deliberately passes no LANDLOCK_RESTRICT_SELF_TSYNC (ABI 8), which
// would put every thread of the process in the domain. Neither launch path
// wants that: the thread launch restricts one locked launcher thread and
// must leave the rest of sbx (the supervisor, which reads /proc and the
// command's memory, and the caller's other goroutines) unrestricted; the
// stage restricts the thread that then calls execve, and execve ends every
// other thread, so the command gets exactly that thread's domain anyway and
// the stage's idle runtime threads run no code of the command's in between.
//
// Nor does it pass the ABI 7 audit flags: by default Landlock logs no
// denial after an execve (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON is off),
// and sbx does not read the audit log (that needs CAP_AUDIT_READ), so
// turning logging on would only fill the host's audit trail; denial reports
// come from the seccomp supervisor.
func (lp *Ruleset) RestrictSelf() error {
	attr := rulesetAttr{handledFS: lp.HandledFS, handledNet: lp.HandledNet, scoped: lp.Scoped}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, r := range lp.Rules {
		if err := addPathRule(ruleset, r, lp.HandledFS); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addPathRule adds r to the ruleset. A path that cannot be opened fails
// the launch: Compile left out only device files that are not there, so
// this is a root that vanished or changed since (a grant the call would
// silently lose, or a rule the plan, and the report, claim).
func addPathRule(ruleset int, r Rule, handled uint64) error {
	fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule %s: open: %w", r.Path, err)
	}
	defer unix.Close(fd)
	access := r.Access & handled
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule %s: fstat: %w", r.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := struct {
		allowed  uint64
		parentFD int32
	}{access, int32(fd)}
	// The kernel's struct is packed (12 bytes); pass exactly that.
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", r.Path, errno)
	}
	return nil
}
