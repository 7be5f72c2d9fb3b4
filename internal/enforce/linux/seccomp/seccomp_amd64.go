//go:build linux

package seccomp

import "golang.org/x/sys/unix"

// legacyWriteNotifyRules are the pre-*at forms of writeNotifyRules' calls,
// which amd64 still has (arm64 and newer architectures have only the *at
// forms). enforce/linux/supervisor/supervise_amd64.go maps each to its *at form.
func legacyWriteNotifyRules(n func(string, uint32, string, ...ArgCond) SeccompRule) []SeccompRule {
	return []SeccompRule{
		n("open", unix.SYS_OPEN, "open for writing, creating or truncating", argAnySet(1, OpenWriteFlags)),
		n("creat", unix.SYS_CREAT, "creates or truncates a file"),
		n("mkdir", unix.SYS_MKDIR, "creates a directory"),
		n("mknod", unix.SYS_MKNOD, "creates a file, fifo, socket or device node"),
		n("unlink", unix.SYS_UNLINK, "removes a file"),
		n("rmdir", unix.SYS_RMDIR, "removes a directory"),
		n("rename", unix.SYS_RENAME, "removes a name and creates another"),
		n("link", unix.SYS_LINK, "creates a hard link"),
		n("symlink", unix.SYS_SYMLINK, "creates a symbolic link"),
		n("chmod", unix.SYS_CHMOD, "changes a mode by path"),
		n("chown", unix.SYS_CHOWN, "changes an owner by path, following symlinks"),
		n("lchown", unix.SYS_LCHOWN, "changes an owner by path, not following symlinks"),
	}
}

// legacyReadNotifyRules is open(2) for readNotifyRules.
func legacyReadNotifyRules(n func(string, uint32, string, ...ArgCond) SeccompRule, reason string) []SeccompRule {
	return []SeccompRule{n("open", unix.SYS_OPEN, reason)}
}

// legacyModeCalls are the pre-*at calls of modeCalls.
func legacyModeCalls() []modeCall {
	return []modeCall{
		{name: "open", nr: unix.SYS_OPEN, mode: 2, flags: 1},
		{name: "creat", nr: unix.SYS_CREAT, mode: 1, flags: -1},
		{name: "mknod", nr: unix.SYS_MKNOD, mode: 1, flags: -1},
		{name: "chmod", nr: unix.SYS_CHMOD, mode: 1, flags: -1, chmod: true},
	}
}
