//go:build linux

package linux

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce"
)

// The securebits a sandboxed command runs with, all locked so it cannot
// clear them: uid 0 is not special at exec (NOROOT: a root command's exec
// grants it no capabilities), changing uids does not touch capabilities
// (NO_SETUID_FIXUP), KEEP_CAPS stays off, and no ambient capability can be
// raised. Set on the launcher thread (root) or in the stage (inside its user
// namespace), they are inherited by the command.
const lockedSecurebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS itself off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropCapabilities empties every capability set of the calling thread but
// keep: the bounding set (so no file capability can bring one back), the
// permitted, effective and inheritable sets, and the ambient set, and locks
// the securebits above. keep (a caller's --cap-add) stays in every set, and
// ambient, so it survives the command's exec.
//
// It needs CAP_SETPCAP (root, or the stage inside its user namespace).
// A thread that holds no capability at all (an unprivileged launch without
// a user namespace) has nothing to drop: the kernel already gives its
// command none, and no_new_privs stops setuid and file capabilities.
// boundingEmpty: the bounding set is empty already (a prestarted launcher
// thread emptied it with dropBoundingSet; keep is then empty too).
func dropCapabilities(keep []int, boundingEmpty bool) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 && len(keep) == 0 {
		return nil
	}
	var want [2]uint32
	for _, c := range keep {
		want[c/32] |= 1 << (c % 32)
	}
	if !boundingEmpty || len(keep) > 0 {
		if err := dropBoundingSet(want); err != nil {
			return err
		}
	}
	// CAP_SETPCAP stays effective until the securebits are set.
	setpcap := [2]uint32{1 << unix.CAP_SETPCAP, 0}
	for i := range data {
		data[i].Permitted = (data[i].Permitted & want[i]) | setpcap[i]
		data[i].Effective = data[i].Permitted
		data[i].Inheritable = want[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for _, c := range keep {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0); err != nil {
			return fmt.Errorf("raise ambient capability %s: %w", CapabilityName(c), err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	for i := range data {
		data[i].Permitted = want[i]
		data[i].Effective = want[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// CapabilityName is enforce.CapabilityName.
func CapabilityName(c int) string { return enforce.CapabilityName(c) }

// dropBoundingSet drops every capability but want's from the calling
// thread's bounding set, up to the highest the running kernel knows: the
// first it does not know is EINVAL. (Asked of the kernel, not read from
// /proc/sys/kernel/cap_last_cap: that read, once per capability, was a
// fifth of a server's CPU time per call, and a /proc that cannot be read
// must not leave a capability in the bounding set.) It needs CAP_SETPCAP.
// The bounding set limits only what an exec can gain: the thread keeps its
// own effective capabilities (a prestarted launcher thread drops it ahead
// of its mounts, ~40 system calls off the call's path).
func dropBoundingSet(want [2]uint32) error {
	for c := 0; c < 64; c++ {
		if want[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) && c > unix.CAP_SETPCAP {
			return nil
		}
		if err != nil {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	return nil
}
