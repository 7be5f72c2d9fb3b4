//go:build linux

package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// The supervisor's half of masks and hard links (enforce/linux's
// maskinode.go finds the other names of masked files when the plan is
// compiled): an open of one of those names is refused here, the only check
// there is for them (best effort).

// MaskedLink is a file a guard mask hides that has names no mask covers:
// hard links made before the call.
type MaskedLink struct {
	Dev, Ino uint64
	// Mask is the masked path that hides the file; Path is the file's
	// name under it (Mask itself for a masked file).
	Mask, Path string
	// Uncovered counts the file's names outside every mask.
	Uncovered uint64
}

// MaskedLinkOf returns the masked file that path (resolved in sbx's view, a
// final symlink not followed) is another name of, if any, among links,
// which inodes indexes.
func MaskedLinkOf(links []MaskedLink, inodes map[DevIno]int, path string) (MaskedLink, bool) {
	if len(inodes) == 0 {
		return MaskedLink{}, false
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return MaskedLink{}, false
	}
	i, ok := inodes[DevIno{uint64(st.Dev), st.Ino}]
	if !ok {
		return MaskedLink{}, false
	}
	return links[i], true
}

// linkOfMasked refuses an open of r, an existing path, when no mask covers
// it and it is another name of a masked file: the mount hides only the
// masked name, so here the supervisor is the only check (best effort, see
// the top of this file). op is "read" or "write".
func (s *Supervisor) linkOfMasked(c call, op string, r resolved) (decision, bool) {
	if r.mode&unix.S_IFMT != unix.S_IFREG || fspath.CoveredBy(r.path, s.in.MaskedMounts) {
		return cont, false // the mount decides a masked name
	}
	m, ok := MaskedLinkOf(s.in.MaskedLinks, s.in.MaskedInodes, r.path)
	if !ok {
		return cont, false
	}
	reason := "forbidden by guard: a hard link of " + m.Path + ", which is hidden"
	if m.Path != m.Mask {
		reason = "forbidden by guard: a hard link of " + m.Path + ", hidden under " + m.Mask
	}
	return s.refuse(unix.EACCES, report.Denial{Operation: op, Path: r.path, Syscall: c.name, PID: c.tid, Reason: reason}), true
}
