//go:build linux

package linux

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Guard masks are mounts, and a mount covers a path, not a file (DESIGN.md
// invariant 5): a hard link made before the call (`ln .env innocent`)
// still reaches what the mask hides. No kernel wall sbx sets up can take
// one inode away from under a granted tree: Landlock only grants, and
// finding every name of an inode to mount over it would mean reading the
// whole file system. So at compile time sbx looks for the names the masks
// miss, cheaply (the link count of each masked regular file, and of the
// files under a masked directory, up to maskLinkLimit entries), reports
// them as a "mask-links" downgrade, and hands their inodes to the seccomp
// supervisor, which refuses the opens that reach one of them.
//
// IMPORTANT: that refusal is the supervisor's alone, so it is best effort
// (invariant 1): it resolves the opened path and stats it before the kernel
// opens it, so a racing rename can swap the name in between; an open it
// cannot resolve (a deleted directory fd) continues; execve of a link is
// not supervised; and names made later by someone outside the sandbox are
// not known. The downgrade therefore stays whether or not the supervisor
// runs, and --require mask-links refuses to run.

// maskLinkLimit bounds the entries read under the masked directories of
// one call, since the walk is paid on every call.
const maskLinkLimit = 4096

// maskScan is what maskLinks found.
type maskScan struct {
	links []supervise.MaskedLink
	// gaps, by mask, say what was not checked: entries past the limit,
	// directories that could not be read.
	gaps map[string]string
}

// maskLinks finds the regular files under masked (paths that exist) with
// more names than the masks cover. limit bounds the directory entries
// read, over all masks.
func maskLinks(masked []string, limit int) maskScan {
	scan := maskScan{gaps: map[string]string{}}
	type seen struct {
		link  supervise.MaskedLink
		nlink uint64
		names uint64 // names found under the masks
	}
	files := map[supervise.DevIno]*seen{}
	var order []supervise.DevIno
	add := func(mask, path string, st *unix.Stat_t) {
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
			return
		}
		k := supervise.DevIno{Dev: uint64(st.Dev), Ino: st.Ino}
		f := files[k]
		if f == nil {
			f = &seen{link: supervise.MaskedLink{Dev: k.Dev, Ino: k.Ino, Mask: mask, Path: path}, nlink: uint64(st.Nlink)}
			files[k] = f
			order = append(order, k)
		}
		f.names++
	}
	entries := 0
	for _, m := range masked {
		if covered(m, masked) {
			continue // its names are counted under the wider mask
		}
		var st unix.Stat_t
		// Stat, not Lstat: the mount lands on what a symlink points to.
		if err := unix.Stat(m, &st); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			add(m, m, &st)
			continue
		}
		if entries > limit {
			scan.gaps[m] = fmt.Sprintf("not read: the %d entries sbx reads under the masks were used up, so its files were not checked for hard links", limit)
			continue
		}
		filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if _, ok := scan.gaps[m]; !ok {
					scan.gaps[m] = fmt.Sprintf("%s could not be read (%v): the files in it were not checked for hard links", path, unwrapPathError(err))
				}
				return nil // skip it, check the rest
			}
			if entries++; entries > limit {
				scan.gaps[m] = fmt.Sprintf("more than %d entries under the masks: the files past them were not checked for hard links", limit)
				return fs.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil {
				add(m, path, &st)
			}
			return nil
		})
	}
	for _, k := range order {
		if f := files[k]; f.names < f.nlink {
			f.link.Uncovered = f.nlink - f.names
			scan.links = append(scan.links, f.link)
		}
	}
	return scan
}

// covered reports whether m lies strictly inside another of masks.
func covered(m string, masks []string) bool {
	for _, o := range masks {
		if o != m && fspath.Within(m, o) {
			return true
		}
	}
	return false
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// compileMaskLinks records, for the masks of pol (masked: those that
// exist, before the plan decided whether it can mount them), the hard
// links they do not cover: a "mask-links" downgrade per mask, and the
// files' inodes for the supervisor (Plan.MaskedLinks) where the masks are
// mounted.
func (p *Plan) compileMaskLinks(masked []string) {
	scan := maskLinks(masked, maskLinkLimit)
	if len(scan.links) == 0 && len(scan.gaps) == 0 {
		return
	}
	mounted := len(p.MaskedMounts) > 0
	byMask := map[string][]supervise.MaskedLink{}
	for _, l := range scan.links {
		byMask[l.Mask] = append(byMask[l.Mask], l)
	}
	for _, m := range masked {
		links, gap := byMask[m], scan.gaps[m]
		if len(links) == 0 && gap == "" {
			continue
		}
		var what []string
		switch {
		case len(links) == 1 && links[0].Path == m:
			what = append(what, fmt.Sprintf("%s has %d other hard link(s), which the mask does not cover", m, links[0].Uncovered))
		case len(links) > 0:
			what = append(what, fmt.Sprintf("%d file(s) under %s have hard links outside it, which the mask does not cover (%s among them)", len(links), m, links[0].Path))
		}
		if gap != "" {
			what = append(what, m+": "+gap)
		}
		reason := strings.Join(what, "; ")
		plain := report.Downgrade{Feature: report.FeatureMaskLinks, Reason: reason + ": reading them through their other names is not prevented"}
		switch {
		case !mounted:
			plain.Reason = reason + ": the masks are not applied either (see mask)"
			p.Downgrades = append(p.Downgrades, plain)
		case p.Supervise != SuperviseOff && len(links) > 0:
			p.addSupervised(report.Downgrade{Feature: report.FeatureMaskLinks, Reason: reason +
				": the seccomp supervisor refuses opens that reach them through another name (EACCES), best effort: it checks the inode before the kernel opens the path, and does not see execve"}, plain)
		default:
			p.Downgrades = append(p.Downgrades, plain)
		}
	}
	if !mounted {
		return
	}
	p.MaskedLinks = scan.links
	p.maskedInodes = make(map[supervise.DevIno]int, len(scan.links))
	for i, l := range scan.links {
		p.maskedInodes[supervise.DevIno{Dev: l.Dev, Ino: l.Ino}] = i
	}
}

// maskedLink returns the masked file that path (resolved in sbx's view, a
// final symlink not followed) is another name of, if any.
func (p *Plan) maskedLink(path string) (supervise.MaskedLink, bool) {
	return supervise.MaskedLinkOf(p.MaskedLinks, p.maskedInodes, path)
}
