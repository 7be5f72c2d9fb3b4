//go:build linux

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// taskView resolves the paths one task of the sandboxed command names, the
// way the kernel would for that task, from sbx's side: relative to the
// task's cwd or a directory fd, inside its root, following its symlinks, and
// with /proc/self meaning the task, not sbx.
//
// The sandbox does not change the file-system layout the command sees (its
// private mount namespace only makes existing paths read-only or hides
// them, and mount calls are refused by the filter), so a path resolved in
// sbx's mount namespace names the object the command's call would reach.
//
// IMPORTANT: the answer is racy by nature: the command can change a
// symlink or rename a directory between this resolution and the kernel's.
// The supervisor therefore uses it only to refuse and report, never to
// allow anything Landlock would not (see supervise.go).
type taskView struct {
	tid  int
	root string // the task's root as a path in sbx's view, "/" unless chrooted
	// rootKnown: root was read from /proc. Until then it is assumed to be
	// "/" (a chroot needs privilege the command rarely has); a refusal
	// first reads it (see supervisor.decide).
	rootKnown bool
	tgid      int // 0 until needed

	// After a resolution that failed, blind says why sbx could not see what
	// the kernel would reach (a link under /proc that reads "(deleted)" or
	// cannot be read); it stays "" when the call fails by itself (ENOENT or
	// ENOTDIR on the way, a loop). nameless says the object reached is in
	// no directory at all (a pipe, a socket, a deleted file with no other
	// name, an O_TMPFILE), so no rule about paths applies to it.
	blind    string
	nameless bool
}

// cannot records why a resolution could not be seen; the first reason wins.
func (v *taskView) cannot(format string, a ...any) bool {
	if v.blind == "" {
		v.blind = fmt.Sprintf(format, a...)
	}
	return false
}

// reset forgets what the last failed resolution recorded.
func (v *taskView) reset() { v.blind, v.nameless = "", false }

func newTaskView(tid int) *taskView { return &taskView{tid: tid, root: "/"} }

// loadRoot reads the task's root. ok is false when the task is gone or its
// root is not a path sbx can use.
func (v *taskView) loadRoot() bool {
	root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", v.tid))
	if err != nil {
		return v.cannot("the task's root: %v", err)
	}
	if !filepath.IsAbs(root) || strings.HasSuffix(root, " (deleted)") {
		return v.cannot("the task's root is %q", root)
	}
	v.root, v.rootKnown = root, true
	return true
}

// atFDCWD is AT_FDCWD as the low 32 bits of a syscall argument.
const atFDCWD = int32(unix.AT_FDCWD)

// dir returns the directory dirfd names for the task: its cwd for AT_FDCWD,
// else what the fd refers to, which must be a directory path.
func (v *taskView) dir(dirfd int32) (string, bool) {
	var link string
	if dirfd == atFDCWD {
		link = fmt.Sprintf("/proc/%d/cwd", v.tid)
	} else {
		link = fmt.Sprintf("/proc/%d/fd/%d", v.tid, dirfd)
	}
	p, err := os.Readlink(link)
	switch {
	case err != nil:
		return "", v.cannot("%s: %v", dirName(dirfd), err)
	case !filepath.IsAbs(p):
		return "", false // a pipe or a socket: ENOTDIR by itself
	case strings.HasSuffix(p, " (deleted)"):
		// Names in a deleted directory do not resolve, but ".." does.
		return "", v.cannot("%s is %q", dirName(dirfd), p)
	}
	return p, true
}

func dirName(dirfd int32) string {
	if dirfd == atFDCWD {
		return "the task's cwd"
	}
	return fmt.Sprintf("fd %d", dirfd)
}

// fdPath returns the path an fd of the task refers to, when it is one.
// When it is not, v says whether the object has no name (nameless) or sbx
// cannot tell (blind).
func (v *taskView) fdPath(fd int32) (string, bool) {
	link := fmt.Sprintf("/proc/%d/fd/%d", v.tid, fd)
	p, err := os.Readlink(link)
	if err != nil {
		return "", v.cannot("fd %d: %v", fd, err)
	}
	if !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return "", v.noPath(link, p)
	}
	return p, true
}

// noPath classifies the magic link link of the task, whose target is not
// a path sbx can use: a pipe, socket or anon inode ("pipe:[N]") has no name;
// a "(deleted)" one has none left only when its link count is 0 (an
// O_TMPFILE, an unlinked file); otherwise another name of it may be
// anywhere, and sbx cannot tell where.
func (v *taskView) noPath(link, target string) bool {
	if !filepath.IsAbs(target) {
		v.nameless = true
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(link, &st); err != nil {
		return v.cannot("%s is %q: %v", link, target, err)
	}
	if st.Nlink == 0 {
		v.nameless = true
		return false
	}
	return v.cannot("%s is %q, a file with %d other name(s)", link, target, st.Nlink)
}

// resolved is a path as the kernel would reach it.
type resolved struct {
	path   string // absolute, clean, no symlinks except a final unfollowed one
	exists bool
	mode   uint32 // st_mode of the final object when it exists (lstat)
	// st is the whole lstat of the final object when the resolution that
	// found it kept it (stat set), so that the common allowed write is
	// checked against its mode bits without a second stat (issue 31).
	st   unix.Stat_t
	stat bool
}

// statOf returns the stat of the object r names, following a final
// symlink: the one r kept when it is not a symlink, else nil.
func (r resolved) statOf() *unix.Stat_t {
	if !r.stat || !r.exists || r.isSymlink() {
		return nil
	}
	return &r.st
}

func (r resolved) isDir() bool     { return r.exists && r.mode&unix.S_IFMT == unix.S_IFDIR }
func (r resolved) isSymlink() bool { return r.exists && r.mode&unix.S_IFMT == unix.S_IFLNK }

// resolveAt resolves path relative to dirfd for the task: first by asking
// the kernel (resolveFast), and when that cannot answer, by walking the
// path (resolve).
func (v *taskView) resolveAt(dirfd int32, path string, followLast bool) (resolved, bool) {
	if path == "" {
		return resolved{}, false
	}
	if v.root == "/" {
		r, answer, ok := v.resolveFast(dirfd, path, followLast)
		if answer {
			return r, ok
		}
	}
	base := "/"
	if path[0] != '/' {
		var ok bool
		if base, ok = v.dir(dirfd); !ok {
			return resolved{}, false
		}
	}
	return v.resolve(base, path, followLast)
}

// resolveFast has the kernel resolve the directory part of path, from
// sbx, which sees the same tree as the task when its root is "/", and looks
// at the last component itself. Most paths have no symlinks: openat2 with
// RESOLVE_NO_SYMLINKS proves that, and then the clean spelling is the
// resolved path (three or four syscalls whatever the depth). A path with
// symlinks is opened with RESOLVE_NO_MAGICLINKS and its directory read back
// from /proc/self/fd. answer is false when it cannot tell and the path must
// be walked: a magic link or /proc on the way (which would name sbx, not
// the task), a final symlink to follow, a path ending in "/", "." or "..",
// a kernel without openat2.
func (v *taskView) resolveFast(dirfd int32, path string, followLast bool) (r resolved, answer, ok bool) {
	i := strings.LastIndexByte(path, '/')
	dirPart, base := ".", path
	if i >= 0 {
		dirPart, base = path[:i], path[i+1:]
		if dirPart == "" {
			dirPart = "/"
		}
	}
	if base == "" || base == "." || base == ".." {
		return resolved{}, false, false
	}
	if path[0] != '/' {
		cwd, ok := v.dir(dirfd)
		if !ok {
			return resolved{}, true, false
		}
		dirPart = cwd + "/" + dirPart
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	pfd, err := unix.Openat2(unix.AT_FDCWD, dirPart, &how)
	var parent string
	switch {
	case err == nil:
		// No symlinks on the way, so ".." means what it says.
		parent = filepath.Clean(dirPart)
	case errors.Is(err, unix.ELOOP):
		how.Resolve = unix.RESOLVE_NO_MAGICLINKS
		if pfd, err = unix.Openat2(unix.AT_FDCWD, dirPart, &how); err != nil {
			return resolved{}, !errors.Is(err, unix.ELOOP) && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)), false
		}
		if parent, err = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", pfd)); err != nil || !filepath.IsAbs(parent) || strings.HasSuffix(parent, " (deleted)") {
			unix.Close(pfd)
			return resolved{}, true, v.cannot("the directory of %q: %q %v", path, parent, err)
		}
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return resolved{}, true, false // the call fails by itself
	default:
		return resolved{}, false, false
	}
	defer unix.Close(pfd)
	if parent == "/proc" || strings.HasPrefix(parent, "/proc/") {
		return resolved{}, false, false
	}
	full := filepath.Join(parent, base)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return resolved{path: full}, true, true
		}
		return resolved{}, true, v.cannot("stat %s: %v", full, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && followLast {
		return resolved{}, false, false
	}
	return resolved{path: full, exists: true, mode: st.Mode, st: st, stat: true}, true, true
}

// maxSymlinks is the kernel's MAXSYMLINKS: more links in one lookup is ELOOP.
const maxSymlinks = 40

// resolve resolves path for the task, relative to base (an absolute
// directory) when it is relative. followLast says whether a symlink in the
// last component is followed (open without O_NOFOLLOW, truncate, chmod) or
// not (mkdir, unlink, rename, lchown). ok is false when the supervisor
// cannot tell what the kernel would reach: a missing or non-directory
// component before the last (the call fails with ENOENT or ENOTDIR by
// itself), a loop, or a link under /proc to something that is not a path
// (a pipe, a socket, a deleted file). The caller then lets the kernel
// decide.
func (v *taskView) resolve(base, path string, followLast bool) (resolved, bool) {
	if path == "" {
		return resolved{}, false
	}
	cur := base
	if path[0] == '/' {
		cur = v.root
	}
	comps := strings.Split(path, "/")
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		if c == "" || c == "." {
			if len(comps) == 0 {
				break
			}
			continue
		}
		if c == ".." {
			if cur != v.root {
				cur = filepath.Dir(cur)
			}
			continue
		}
		next := v.procSelf(filepath.Join(cur, c))
		last := onlyEmpty(comps)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			switch {
			case errors.Is(err, unix.ENOENT) && last:
				return resolved{path: next}, true
			case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
				return resolved{}, false // the call fails by itself
			}
			return resolved{}, v.cannot("lstat %s: %v", next, err)
		}
		isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
		// A trailing slash makes the kernel follow a final symlink too.
		if isLink && (!last || followLast || len(comps) > 0) {
			links++
			if links > maxSymlinks {
				return resolved{}, false
			}
			target, err := os.Readlink(next)
			if err != nil || target == "" {
				return resolved{}, v.cannot("readlink %s: %q %v", next, target, err)
			}
			if strings.HasPrefix(next, "/proc/") {
				// A magic link (/proc/PID/fd/N, cwd, root, exe) shows a path
				// in sbx's view, or something that is no path at all.
				if !filepath.IsAbs(target) || strings.HasSuffix(target, " (deleted)") {
					if !last {
						return resolved{}, v.cannot("%s is %q", next, target)
					}
					return resolved{}, v.noPath(next, target)
				}
				cur = "/"
				comps = append(strings.Split(target[1:], "/"), comps...)
				continue
			}
			if filepath.IsAbs(target) {
				cur = v.root
			}
			comps = append(strings.Split(target, "/"), comps...)
			continue
		}
		if !last && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return resolved{}, false
		}
		cur = next
		if last {
			return resolved{path: cur, exists: true, mode: st.Mode}, true
		}
	}
	// The path ended on "/", "." or ".." (the base, the root or a parent):
	// a directory that exists.
	var st unix.Stat_t
	if err := unix.Lstat(cur, &st); err != nil {
		return resolved{}, v.cannot("lstat %s: %v", cur, err)
	}
	return resolved{path: cur, exists: true, mode: st.Mode}, true
}

func onlyEmpty(comps []string) bool {
	for _, c := range comps {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// procSelf rewrites /proc/self and /proc/thread-self to the task's own
// entries: resolved by sbx, they would name sbx.
func (v *taskView) procSelf(p string) string {
	if v.root != "/" {
		return p
	}
	switch {
	case p == "/proc/self":
		if tgid := v.threadGroup(); tgid > 0 {
			return "/proc/" + strconv.Itoa(tgid)
		}
	case p == "/proc/thread-self":
		if tgid := v.threadGroup(); tgid > 0 {
			return fmt.Sprintf("/proc/%d/task/%d", tgid, v.tid)
		}
	}
	return p
}

// threadGroup reads the task's Tgid (the pid of its process), 0 if unknown.
func (v *taskView) threadGroup() int {
	if v.tgid != 0 {
		return v.tgid
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", v.tid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			v.tgid, _ = strconv.Atoi(strings.TrimSpace(rest))
			break
		}
	}
	return v.tgid
}
