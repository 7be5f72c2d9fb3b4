//go:build linux

package supervisor

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file decides the file-system calls the supervisor is notified of
// (notify.go decodes them; see supervise.go for the rules).

// decidePath decides the file-system calls, with the view's idea of the
// task's root.
func (s *Supervisor) decidePath(v *taskView, c call) decision {
	switch c.nr {
	case unix.SYS_OPENAT:
		return s.open(v, c, c.fd(0), c.args[1], uint64(c.u32(2)), 0)
	case unix.SYS_OPENAT2:
		// The filter answers openat2 ENOSYS (enforce/linux/seccomp/seccomp_setid.go), so none
		// comes here; still decoded, so that a table that routes it
		// again is decided rather than refused blind.
		var how [24]byte // struct open_how: flags, mode, resolve (u64 each)
		if c.args[3] < uint64(len(how)) {
			return cont // EINVAL
		}
		if !readFull(c.tid, c.args[2], how[:]) {
			return s.blind(c, "write", "", "cannot read struct open_how from the task's memory")
		}
		return s.open(v, c, c.fd(0), c.args[1], binary.LittleEndian.Uint64(how[0:]), binary.LittleEndian.Uint64(how[16:]))
	case unix.SYS_MKDIRAT:
		return s.entryAt(v, c, "create", denial.Create, c.fd(0), c.args[1])
	case unix.SYS_MKNODAT:
		switch c.u32(2) & unix.S_IFMT {
		case unix.S_IFCHR, unix.S_IFBLK:
			return s.entryAt(v, c, "create", denial.MakeDevice, c.fd(0), c.args[1])
		}
		return s.entryAt(v, c, "create", denial.Create, c.fd(0), c.args[1])
	case unix.SYS_UNLINKAT:
		return s.entryAt(v, c, "remove", denial.Remove, c.fd(0), c.args[1])
	case unix.SYS_SYMLINKAT:
		return s.entryAt(v, c, "create", denial.Create, c.fd(1), c.args[2])
	case unix.SYS_RENAMEAT:
		return s.rename(v, c, 0)
	case unix.SYS_RENAMEAT2:
		return s.rename(v, c, c.u32(4))
	case unix.SYS_LINKAT:
		return s.link(v, c)
	case unix.SYS_TRUNCATE:
		return s.objectAt(v, c, "write", denial.WriteObject, atFDCWD, c.args[0], true, false)
	case unix.SYS_FCHMODAT:
		return s.objectAt(v, c, "chmod", denial.Metadata, c.fd(0), c.args[1], true, false)
	case unix.SYS_FCHMODAT2:
		fl := c.u32(3)
		return s.objectAt(v, c, "chmod", denial.Metadata, c.fd(0), c.args[1], fl&unix.AT_SYMLINK_NOFOLLOW == 0, fl&unix.AT_EMPTY_PATH != 0)
	case unix.SYS_FCHOWNAT:
		fl := c.u32(4)
		return s.objectAt(v, c, "chown", denial.Metadata, c.fd(0), c.args[1], fl&unix.AT_SYMLINK_NOFOLLOW == 0, fl&unix.AT_EMPTY_PATH != 0)
	case unix.SYS_FCHMOD:
		return s.objectFD(v, c, "chmod", c.fd(0))
	case unix.SYS_FCHOWN:
		return s.objectFD(v, c, "chown", c.fd(0))
	}
	return s.blind(c, "syscall", "", "the supervisor does not decode this call")
}

// pathArg reads the path at addr and resolves it against dirfd. When it
// fails, v says whether sbx could not see (v.blind) or the call fails by
// itself; raw is the path as read, for a denial.
func (s *Supervisor) pathArg(v *taskView, c call, dirfd int32, addr uint64, follow bool) (r resolved, raw string, ok bool) {
	raw, ok = s.pathString(v, c, addr)
	if !ok {
		return resolved{}, "", false
	}
	r, ok = s.resolveAt(v, dirfd, raw, follow)
	return r, raw, ok
}

// resolveAt is v.resolveAt, with a carve-out's placeholder taken for the
// name that does not exist it stands for (Plan.Placeholders): making it is
// refused, and reported, as making the carve-out; removing it the mount
// refuses by itself (EBUSY).
func (s *Supervisor) resolveAt(v *taskView, dirfd int32, raw string, follow bool) (resolved, bool) {
	r, ok := v.resolveAt(dirfd, raw, follow)
	if ok && r.exists && slices.Contains(s.in.Placeholders, r.path) {
		r.exists = false
	}
	return r, ok
}

// open decides openat and openat2.
func (s *Supervisor) open(v *taskView, c call, dirfd int32, addr, flags, resolveFlags uint64) decision {
	if flags&seccomp.OpenWriteFlags == 0 {
		return s.read(v, c, dirfd, addr, flags)
	}
	if resolveFlags&unix.RESOLVE_IN_ROOT != 0 {
		// IMPORTANT: other RESOLVE_* flags only make the kernel's lookup
		// stricter (it fails with ELOOP or EXDEV where this one follows); the
		// worst case is a denial recorded for a call that would have failed
		// for another reason.
		root, ok := v.dir(dirfd)
		if !ok {
			return s.unseen(v, c, "write", "")
		}
		v = &taskView{tid: v.tid, root: root, rootKnown: true}
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		// An unnamed file in a directory: Landlock checks MAKE_REG there,
		// so the directory itself is what must be writable.
		r, raw, ok := s.pathArg(v, c, dirfd, addr, true)
		if !ok {
			return s.unseen(v, c, "write", raw)
		}
		if !r.isDir() {
			return cont // ENOTDIR
		}
		return s.object(c, "write", denial.WriteObject, r)
	}
	excl := flags&unix.O_CREAT != 0 && flags&unix.O_EXCL != 0
	r, raw, ok := s.pathArg(v, c, dirfd, addr, flags&unix.O_NOFOLLOW == 0 && !excl)
	if !ok {
		return s.unseen(v, c, "write", raw)
	}
	switch {
	case !r.exists && flags&unix.O_CREAT != 0:
		return s.entry(c, "create", denial.Create, r)
	case !r.exists, excl, r.isDir(), r.isSymlink():
		// ENOENT, EEXIST, EISDIR, ELOOP: the call fails by itself.
		return cont
	}
	if d, ok := s.linkOfMasked(c, "write", r); ok {
		return d // O_RDWR reads it too, and deny_read forbids writing
	}
	return s.object(c, "write", denial.WriteObject, r)
}

// read decides an open for reading: one of a path the mount namespace
// hides is a denial. The call continues: the mask (an empty tmpfs or
// /dev/null over the path) is what keeps the content from the command, and
// it gives the answer it gives (an empty file or directory, or ENOENT
// inside a hidden directory); the supervisor only records that the command
// tried. A path that does not exist outside the sandbox either is an
// ordinary ENOENT, not a denial.
func (s *Supervisor) read(v *taskView, c call, dirfd int32, addr, flags uint64) decision {
	if len(s.in.MaskedMounts) == 0 && !HasReadGlobs(s.in.Policy) {
		return cont
	}
	// What cannot be resolved continues: the mask is a mount, the kernel's
	// own wall, and a read is only reported.
	r, _, ok := s.pathArg(v, c, dirfd, addr, flags&unix.O_NOFOLLOW == 0)
	if !ok || !r.exists {
		return cont
	}
	verdict := s.check.Path(denial.Read, r.path)
	if d, ok := s.check.DenyGlobAt(r.path, true); ok && !(verdict.Cause == denial.Masked && slices.Contains(s.in.MaskedMounts, verdict.At)) {
		// No mask hides it (made during the call, past the walk's bound,
		// or no mount namespace): only this refusal does, best effort.
		return s.refuse(unix.EACCES, report.Denial{Operation: "read", Path: r.path, Syscall: c.name, PID: c.tid, Reason: d.Reason()})
	}
	if verdict.Allowed || !slices.Contains(s.in.MaskedMounts, verdict.At) {
		if d, ok := s.linkOfMasked(c, "read", r); ok {
			return d
		}
		return cont
	}
	return s.refuseAll(decision{denials: []report.Denial{{Operation: "read", Path: r.path, Syscall: c.name, PID: c.tid,
		Reason: "forbidden by guard: " + verdict.At + " is hidden"}}})
}

func (s *Supervisor) entryAt(v *taskView, c call, op string, a denial.Access, dirfd int32, addr uint64) decision {
	r, raw, ok := s.pathArg(v, c, dirfd, addr, false)
	if !ok {
		return s.unseen(v, c, op, raw)
	}
	return s.entry(c, op, a, r)
}

// entry decides an access that makes or removes the name r.
func (s *Supervisor) entry(c call, op string, a denial.Access, r resolved) decision {
	d, ok := s.entryVerdict(a, r)
	if !ok {
		return s.entryDAC(c, op, a, r)
	}
	return s.refuse(d.errno, report.Denial{Operation: op, Path: r.path, Syscall: c.name, PID: c.tid, Reason: d.reason})
}

// refusal is a forbidden access before it becomes a decision.
type refusal struct {
	errno  syscall.Errno
	reason string
}

// entryVerdict returns the refusal for access a to the name r, or false
// when the call should continue: the policy allows it, or the kernel would
// fail it anyway.
func (s *Supervisor) entryVerdict(a denial.Access, r resolved) (refusal, bool) {
	switch a {
	case denial.Create, denial.MakeDevice:
		if r.exists {
			return refusal{}, false // EEXIST
		}
	case denial.Remove, denial.RenameFrom, denial.LinkSource:
		if !r.exists {
			return refusal{}, false // ENOENT
		}
	}
	if strings.HasPrefix(r.path, "/proc/") || strings.HasPrefix(r.path, "/sys/") {
		return refusal{}, false // no names are made or removed there: the kernel refuses by itself
	}
	v := s.check.Path(a, r.path)
	if v.Allowed {
		return refusal{}, false
	}
	if a == denial.RenameTo && v.Cause == denial.CarveOut && v.At != r.path && exists(v.At) {
		// An existing carve-out below the target: the target is a non-empty
		// directory, so the rename fails (ENOTEMPTY) by itself.
		return refusal{}, false
	}
	parent := filepath.Dir(r.path)
	switch a {
	case denial.MakeDevice:
		if s.euid != 0 {
			return refusal{}, false // EPERM: no CAP_MKNOD without the sandbox either
		}
	case denial.LinkSource:
		if r.isDir() {
			return refusal{}, false // EPERM: no hard links to directories
		}
		if s.euid != 0 && !owned(r.path, s.euid) && unix.Faccessat(unix.AT_FDCWD, r.path, unix.R_OK|unix.W_OK, unix.AT_EACCESS) != nil {
			return refusal{}, false // EPERM from protected_hardlinks
		}
	default:
		if unix.Faccessat(unix.AT_FDCWD, parent, unix.W_OK|unix.X_OK, unix.AT_EACCESS) != nil {
			return refusal{}, false // EACCES or EROFS without the sandbox too
		}
	}
	if v.Cause == denial.OutsideWriteRoots && s.underWriteRootInode(parent) {
		return refusal{}, false
	}
	errno := s.errnoFor(a, v)
	if errno == unix.EROFS && r.path == v.At {
		// Removing or renaming the read-only bind mount itself: the kernel
		// says EBUSY for a mount point.
		errno = unix.EBUSY
	}
	return refusal{errno: errno, reason: v.Reason()}, true
}

func (s *Supervisor) objectAt(v *taskView, c call, op string, a denial.Access, dirfd int32, addr uint64, follow, emptyPath bool) decision {
	if emptyPath {
		if addr == 0 {
			return s.objectFD(v, c, op, dirfd) // Linux 6.10+ takes NULL for ""
		}
		raw, ok := s.pathString(v, c, addr)
		if !ok {
			return s.unseen(v, c, op, "")
		}
		if raw == "" {
			return s.objectFD(v, c, op, dirfd)
		}
	}
	r, raw, ok := s.pathArg(v, c, dirfd, addr, follow)
	if !ok {
		return s.unseen(v, c, op, raw)
	}
	if !r.exists {
		return cont // ENOENT
	}
	return s.object(c, op, a, r)
}

// objectFD decides fchmod and fchown (and the AT_EMPTY_PATH forms) by the
// path the fd refers to. An object in no directory (a pipe, an O_TMPFILE, an
// unlinked file) continues: no rule about paths applies to it.
func (s *Supervisor) objectFD(v *taskView, c call, op string, fd int32) decision {
	p, ok := v.fdPath(fd)
	if !ok {
		return s.unseen(v, c, op, "")
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		// Renamed or removed since the readlink: sbx cannot tell which
		// name the fd has now.
		return s.blind(c, op, p, fmt.Sprintf("fd %d named %s, which is gone: %v", fd, p, err))
	}
	return s.object(c, op, denial.Metadata, resolved{path: p, exists: true, mode: st.Mode})
}

// object decides an access that changes the existing object r.
func (s *Supervisor) object(c call, op string, a denial.Access, r resolved) decision {
	v := s.check.Path(a, r.path)
	if v.Allowed {
		d, _ := s.dacDenied(c, op, r.path, r.path, unix.W_OK, r.statOf())
		return d
	}
	switch {
	case op == "chmod":
		if s.euid != 0 && !owned(r.path, s.euid) {
			return cont // EPERM: not the owner
		}
	case op == "chown":
		uid, gid := int32(c.u32(2)), int32(c.u32(3))
		if c.nr == unix.SYS_FCHOWN {
			uid, gid = int32(c.u32(1)), int32(c.u32(2))
		}
		if s.euid != 0 && !chownAllowed(r.path, s.euid, uid, gid) {
			return cont // EPERM without the sandbox too
		}
	default:
		if unix.Faccessat(unix.AT_FDCWD, r.path, unix.W_OK, unix.AT_EACCESS) != nil {
			return cont // EACCES (mode bits) or EROFS without the sandbox too
		}
	}
	if v.Cause == denial.OutsideWriteRoots && s.underWriteRootInode(r.path) {
		return cont
	}
	return s.refuse(s.errnoFor(a, v), report.Denial{Operation: op, Path: r.path, Syscall: c.name, PID: c.tid, Reason: v.Reason()})
}

// rename decides renameat and renameat2: each side is checked, and the
// call refused when either is forbidden, with one denial per side.
func (s *Supervisor) rename(v *taskView, c call, flags uint32) decision {
	oldR, raw, ok := s.pathArg(v, c, c.fd(0), c.args[1], false)
	if !ok {
		return s.unseen(v, c, "rename", raw)
	}
	newR, raw, ok := s.pathArg(v, c, c.fd(2), c.args[3], false)
	if !ok {
		return s.unseen(v, c, "rename", raw)
	}
	if !oldR.exists {
		return cont // ENOENT
	}
	switch {
	case flags&unix.RENAME_NOREPLACE != 0 && newR.exists:
		return cont // EEXIST
	case flags&unix.RENAME_EXCHANGE != 0 && !newR.exists:
		return cont // ENOENT
	}
	oldAccess := denial.RenameFrom
	if flags&unix.RENAME_EXCHANGE != 0 {
		oldAccess = denial.RenameTo // both names are made anew
	}
	var d decision
	for _, side := range []struct {
		a denial.Access
		r resolved
	}{{oldAccess, oldR}, {denial.RenameTo, newR}} {
		if ref, ok := s.entryVerdict(side.a, side.r); ok {
			if d.errno == 0 {
				d.errno = ref.errno
			}
			d.denials = append(d.denials, report.Denial{Operation: "rename", Path: side.r.path, Syscall: c.name, PID: c.tid, Reason: ref.reason})
		}
	}
	if d.errno == 0 && oldR.isDir() {
		if ref, ok := s.renamedTree(oldR.path, newR.path); ok {
			d.errno = ref.errno
			d.denials = append(d.denials, report.Denial{Operation: "rename", Path: newR.path, Syscall: c.name, PID: c.tid, Reason: ref.reason})
		}
	}
	if d.errno == 0 && flags&unix.RENAME_EXCHANGE != 0 && newR.isDir() {
		if ref, ok := s.renamedTree(newR.path, oldR.path); ok {
			d.errno = ref.errno
			d.denials = append(d.denials, report.Denial{Operation: "rename", Path: oldR.path, Syscall: c.name, PID: c.tid, Reason: ref.reason})
		}
	}
	if d.errno == 0 {
		return cont
	}
	return s.refuseAll(d)
}

// link decides linkat: the new name is a Create, the old one a LinkSource.
// An old name that is in no directory (an O_TMPFILE, by AT_EMPTY_PATH or by
// /proc/self/fd/N) is no source to check: only the new name is.
func (s *Supervisor) link(v *taskView, c call) decision {
	flags := c.u32(4)
	oldR, nameless, d := s.linkSource(v, c, flags)
	if d.errno != 0 {
		return d
	}
	newV := newTaskView(v.tid)
	newV.root, newV.rootKnown = v.root, v.rootKnown
	newR, raw, ok := s.pathArg(newV, c, c.fd(2), c.args[3], false)
	if !ok {
		return s.unseen(newV, c, "create", raw)
	}
	if (!nameless && !oldR.exists) || newR.exists {
		return cont // ENOENT, EEXIST
	}
	if ref, ok := s.entryVerdict(denial.Create, newR); ok {
		d.errno = ref.errno
		d.denials = append(d.denials, report.Denial{Operation: "create", Path: newR.path, Syscall: c.name, PID: c.tid, Reason: ref.reason})
	}
	if nameless {
		// Nothing else to check.
	} else if ref, ok := s.entryVerdict(denial.LinkSource, oldR); ok {
		if d.errno == 0 {
			d.errno = ref.errno
		}
		d.denials = append(d.denials, report.Denial{Operation: "link", Path: oldR.path, Syscall: c.name, PID: c.tid, Reason: ref.reason})
	}
	if d.errno == 0 {
		return cont
	}
	return s.refuseAll(d)
}

// linkSource resolves linkat's old name. nameless says it is in no
// directory; d is a refusal when sbx cannot see it.
func (s *Supervisor) linkSource(v *taskView, c call, flags uint32) (r resolved, nameless bool, d decision) {
	raw := ""
	if flags&unix.AT_EMPTY_PATH != 0 {
		var ok bool
		if c.args[1] != 0 {
			if raw, ok = s.pathString(v, c, c.args[1]); !ok {
				return resolved{}, false, s.unseen(v, c, "link", "")
			}
		}
		if raw == "" {
			p, ok := v.fdPath(c.fd(0))
			if !ok {
				return resolved{}, v.nameless, s.unseen(v, c, "link", "")
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return resolved{}, false, s.blind(c, "link", p, fmt.Sprintf("fd %d named %s, which is gone: %v", c.fd(0), p, err))
			}
			return resolved{path: p, exists: true, mode: st.Mode}, false, cont
		}
	}
	r, raw, ok := s.pathArg(v, c, c.fd(0), c.args[1], flags&unix.AT_SYMLINK_FOLLOW != 0)
	if !ok {
		return resolved{}, v.nameless, s.unseen(v, c, "link", raw)
	}
	return r, false, cont
}

// errnoFor is the errno the kernel rules compiled from the policy would
// give: a read-only mount says EROFS, Landlock EACCES (EXDEV for a link it
// would not let reparent). chmod and chown are not Landlock's: EPERM, as for
// a file one does not own.
func (s *Supervisor) errnoFor(a denial.Access, v denial.Verdict) syscall.Errno {
	switch v.Cause {
	case denial.CarveOut:
		if slices.Contains(s.in.ReadOnlyMounts, v.At) {
			return unix.EROFS
		}
	case denial.Masked:
		if slices.Contains(s.in.MaskedMounts, v.At) {
			return unix.EROFS
		}
	case denial.OutsideWriteRoots:
		if a == denial.LinkSource {
			return unix.EXDEV
		}
	}
	if a == denial.Metadata {
		return unix.EPERM
	}
	return unix.EACCES
}

// underWriteRootInode reports whether p or a directory above it is a write
// root by inode: the same tree reached through another path (a bind mount,
// a hard link to a granted file), which Landlock allows because its rules
// belong to inodes, not to spellings. Checked only before a refusal.
func (s *Supervisor) underWriteRootInode(p string) bool {
	for {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && s.roots[DevIno{st.Dev, st.Ino}] {
			return true
		}
		if p == "/" {
			return false
		}
		p = filepath.Dir(p)
	}
}

func exists(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil
}

// chownAllowed is the kernel's rule without CAP_CHOWN: the owner may keep
// the owner and set the group to one of its own.
func chownAllowed(p string, euid int, uid, gid int32) bool {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || int(st.Uid) != euid {
		return false
	}
	if uid != -1 && uint32(uid) != st.Uid {
		return false
	}
	if gid == -1 || uint32(gid) == st.Gid || int(gid) == unix.Getegid() {
		return true
	}
	groups, _ := unix.Getgroups()
	return slices.Contains(groups, int(gid))
}

func owned(p string, uid int) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && int(st.Uid) == uid
}
