//go:build linux

package linux

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// PostCallSource is the Source of a denial the post-call check found: a
// watched carve-out (Plan.Watched) that exists once the command's tree is
// dead, which the supervisor refuses to create; a racing thread, which
// changed the path after its check, made it anyway.
const PostCallSource = "post-call-check"

// watch is a watched carve-out: its name in the directory dir, an O_PATH
// descriptor opened before the command started, so that the check after
// the call looks in that directory even if the command renamed it away
// and left a symbolic link (to a real repository's .git) in its place.
type watch struct {
	dir  int
	name string
	path string
}

// openWatches opens the directories of the plan's watched carve-outs. A
// directory that can no longer be opened fails the launch: the call would
// run with a carve-out that nothing checks.
func openWatches(paths []string) ([]watch, error) {
	var ws []watch
	for _, p := range paths {
		fd, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeWatches(ws)
			return nil, fmt.Errorf("watch carve-out %s: open %s: %w", p, filepath.Dir(p), err)
		}
		ws = append(ws, watch{dir: fd, name: filepath.Base(p), path: p})
	}
	return ws, nil
}

func closeWatches(ws []watch) {
	for _, w := range ws {
		unix.Close(w.dir)
	}
}

// sweep removes every watched carve-out that exists, and returns a denial
// for each: the command made it, although the supervisor refuses that,
// through a racing thread. It runs once the command's tree is dead (Wait),
// so nothing can make it again after it, or swap what it removes. It closes
// ws.
//
// IMPORTANT: it cannot tell who made the name: a .git made in that
// directory during the call by someone else (the user's git init, a call
// of another sbx with a wider policy) is removed as well, and reported.
func sweep(pol policy.Policy, ws []watch) []report.Denial {
	defer closeWatches(ws)
	// Under the lock placeholders are made and removed under: one that a
	// call of this process holds (it requires carve-out-create) is bound
	// read-only in that call, and removing it here would detach its bind
	// mid-call. Its contents are another's (this call's racing thread, in
	// whose mount namespace it is a plain directory): they go; it stays,
	// for its last holder to remove.
	placeholders.Lock()
	defer placeholders.Unlock()
	var out []report.Denial
	var check *denial.Checker
	for _, w := range ws {
		var st unix.Stat_t
		if err := unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // ENOENT: as it was; anything else, removal would meet it too
		}
		if othersInSticky(w.dir, st, pol) {
			continue
		}
		remove, what := removeAllAt, "it"
		if placeholders.held[w.path] > 0 && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if empty, err := emptyAt(w.dir, w.name); err == nil && empty {
				continue // another call's placeholder, as it made it
			}
			remove, what = removeContentsAt, "what was made in another call's placeholder of it"
		}
		if check == nil {
			check = denial.NewChecker(pol, denial.Extra{})
		}
		reason := check.Path(denial.Create, w.path).Reason()
		if err := remove(w.dir, w.name, removeDepth); err != nil {
			reason += fmt.Sprintf("; %s appeared during the call, and removing it after the call failed: %v", what, err)
		} else {
			reason += "; " + what + " appeared during the call (the supervisor refuses creating it: a racing thread changed the path after the check) and was removed after the call"
		}
		out = append(out, report.Denial{Operation: "create", Path: w.path, Source: PostCallSource,
			Confidence: report.ConfidenceObserved, Count: 1, Reason: reason})
	}
	return out
}

// othersInSticky reports whether st, found in the directory dir, is
// another user's in a sticky directory (/tmp, a writable root of every
// call by default): someone else made it there, not the command, which
// holds no CAP_CHOWN or CAP_SETUID to make it another's (unless the
// policy keeps one: then the check cannot tell, and removes). Root's sbx would otherwise
// remove another user's /tmp/.git made during the call.
func othersInSticky(dir int, st unix.Stat_t, pol policy.Policy) bool {
	var parent unix.Stat_t
	if unix.Fstat(dir, &parent) != nil || parent.Mode&unix.S_ISVTX == 0 {
		return false
	}
	for _, name := range pol.Capabilities {
		if c, err := enforce.ParseCapability(name); err != nil || c == unix.CAP_CHOWN || c == unix.CAP_SETUID {
			return false
		}
	}
	return int(st.Uid) != os.Geteuid()
}

// removeDepth bounds the directories removeAllAt descends into, each one
// file descriptor held: a deeper tree is left and reported.
const removeDepth = 128

// removeAllAt removes name in dir and, if it is a directory, everything in
// it, through descriptors only: a symbolic link is removed, never followed,
// and a directory is opened with O_NOFOLLOW from the descriptor of its
// parent, so the removal stays in the tree it started in.
func removeAllAt(dir int, name string, depth int) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("unlinkat %s: %w", name, err)
	}
	if depth == 0 {
		return fmt.Errorf("%s: more than %d directories deep", name, removeDepth)
	}
	if err := removeContentsAt(dir, name, depth); err != nil {
		return err
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unlinkat %s: %w", name, err)
	}
	return nil
}

// removeContentsAt removes everything in the directory name in dir, as
// removeAllAt does, and leaves the directory.
func removeContentsAt(dir int, name string, depth int) error {
	f, err := openDirAt(dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	// Read whole before removing anything: removing while reading in
	// batches can make the directory's offsets skip a name.
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("getdents %s: %w", name, err)
	}
	for _, n := range names {
		if err := removeAllAt(int(f.Fd()), n, depth-1); err != nil {
			return fmt.Errorf("%s/%w", name, err)
		}
	}
	return nil
}

// emptyAt reports whether the directory name in dir is empty.
func emptyAt(dir int, name string) (bool, error) {
	f, err := openDirAt(dir, name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// openDirAt opens the directory name in dir, not following a symbolic
// link.
func openDirAt(dir int, name string) (*os.File, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		// A directory the command made unreadable: it is the caller's,
		// so the caller may chmod it back (it is known to be a directory,
		// and the tree that could swap it is dead).
		if unix.Fchmodat(dir, name, 0o700, 0) == nil {
			fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("openat %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
