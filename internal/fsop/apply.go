package fsop

import (
	"fmt"
	"strings"
)

// Apply returns what old becomes with p's hunks. Each hunk must match
// exactly (context and removed lines, line endings included); it is looked
// for at the line its header names, then ever farther from there, after
// the previous hunk, like git apply without fuzz. A hunk found nowhere is a
// *PatchError naming it, and nothing is returned.
func (p FilePatch) Apply(old string) (string, error) {
	lines := splitLines(old)
	var out []string
	pos, offset := 0, 0
	for i, h := range p.Hunks {
		from, to := h.sides()
		want := h.OldStart - 1
		if h.OldLines == 0 {
			// A pure insertion names the line it goes after.
			want = h.OldStart
		}
		at, ok := find(lines, from, want+offset, pos)
		if !ok {
			return "", &PatchError{Path: p.Path(), Msg: fmt.Sprintf("hunk %d (%s) does not apply", i+1, h.Header)}
		}
		offset = at - want
		out = append(out, lines[pos:at]...)
		out = append(out, to...)
		pos = at + len(from)
	}
	out = append(out, lines[pos:]...)
	return strings.Join(out, ""), nil
}

// sides are the lines the hunk expects (context and removed) and the lines
// it leaves (context and added).
func (h Hunk) sides() (from, to []string) {
	for _, l := range h.Lines {
		if l.Op != '+' {
			from = append(from, l.Text)
		}
		if l.Op != '-' {
			to = append(to, l.Text)
		}
	}
	return from, to
}

// find looks for want in lines at index near, then at near±1, near±2, ...
// never before floor.
func find(lines, want []string, near, floor int) (int, bool) {
	last := len(lines) - len(want)
	if last < floor {
		return 0, false
	}
	near = max(floor, near)
	if near > last {
		near = last
	}
	for d := 0; near-d >= floor || near+d <= last; d++ {
		for _, at := range []int{near - d, near + d} {
			if at >= floor && at <= last && matches(lines[at:at+len(want)], want) {
				return at, true
			}
		}
	}
	return 0, false
}

func matches(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// splitLines splits s into lines that keep their "\n"; the last one lacks
// it when s does not end with one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
