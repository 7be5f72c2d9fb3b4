package fsop

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// FilePatch is what a unified diff does to one file. OldPath is "" for a
// new file (--- /dev/null), NewPath is "" for a deleted one (+++
// /dev/null); both are as the diff names them, with git's a/ and b/
// prefixes removed.
type FilePatch struct {
	OldPath, NewPath string
	// Mode is the mode from "new file mode" or "new mode"; 0 keeps the
	// existing file's (or gives a new file the default).
	Mode  fs.FileMode
	Hunks []Hunk
}

// IsNew says the patch creates the file.
func (p FilePatch) IsNew() bool { return p.OldPath == "" }

// IsDelete says the patch deletes the file.
func (p FilePatch) IsDelete() bool { return p.NewPath == "" }

// Path is the file the patch changes: the new name, or the old one for a
// deletion.
func (p FilePatch) Path() string {
	if p.IsDelete() {
		return p.OldPath
	}
	return p.NewPath
}

// Hunk is one @@ section. Lines hold the text of each line with its "\n",
// except a line marked "\ No newline at end of file".
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
	// Header is the @@ line, for messages.
	Header string
	Lines  []HunkLine
}

// HunkLine is one line of a hunk: Op is ' ' (context), '-' or '+'.
type HunkLine struct {
	Op   byte
	Text string
}

// PatchError is a patch that is malformed or does not apply. Line is the
// line of the patch (1-based) for a malformed one, 0 otherwise.
type PatchError struct {
	Path string
	Line int
	Msg  string
}

func (e *PatchError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("patch line %d: %s", e.Line, e.Msg)
	case e.Path != "":
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return e.Msg
}

// patchParser walks the lines of a diff. Each line keeps its "\n" (the
// last one gets one if the text lacks it).
type patchParser struct {
	lines []string
	i     int
	out   []FilePatch
	cur   *FilePatch
	// headerPaths says cur's paths came from --- and +++ lines.
	headerPaths bool
}

// ParsePatch parses a unified diff: plain (---, +++, @@) or git's (diff
// --git with its extended headers). Text before the first file and between
// files is ignored, as git does. Renames, copies and binary patches are
// refused, as is a file named twice.
func ParsePatch(text string) ([]FilePatch, error) {
	p := &patchParser{lines: strings.SplitAfter(text, "\n")}
	if n := len(p.lines); p.lines[n-1] == "" {
		p.lines = p.lines[:n-1]
	} else {
		p.lines[n-1] += "\n"
	}
	for p.i < len(p.lines) {
		if err := p.step(); err != nil {
			return nil, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	if len(p.out) == 0 {
		return nil, &PatchError{Msg: "no file in the patch"}
	}
	seen := map[string]bool{}
	for _, f := range p.out {
		if seen[f.Path()] {
			return nil, &PatchError{Path: f.Path(), Msg: "named twice in the patch"}
		}
		seen[f.Path()] = true
	}
	return p.out, nil
}

func (p *patchParser) errorf(format string, a ...any) error {
	return &PatchError{Line: p.i + 1, Msg: fmt.Sprintf(format, a...)}
}

// line is the current line without its line ending.
func (p *patchParser) line() string { return strings.TrimRight(p.lines[p.i], "\r\n") }

func (p *patchParser) step() error {
	l := p.line()
	switch {
	case strings.HasPrefix(l, "diff --git "):
		if err := p.finish(); err != nil {
			return err
		}
		old, new, ok := splitGitHeader(strings.TrimPrefix(l, "diff --git "))
		if !ok {
			return p.errorf("cannot read the file names of %q", l)
		}
		p.cur = &FilePatch{OldPath: old, NewPath: new}
	case strings.HasPrefix(l, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
		if p.cur == nil || p.headerPaths || len(p.cur.Hunks) > 0 {
			if err := p.finish(); err != nil {
				return err
			}
			p.cur = &FilePatch{}
		}
		old, err := headerPath(l[4:], "a/")
		if err != nil {
			return p.errorf("%v", err)
		}
		p.i++
		new, err := headerPath(p.line()[4:], "b/")
		if err != nil {
			return p.errorf("%v", err)
		}
		if old == "" && new == "" {
			return p.errorf("both sides are /dev/null")
		}
		p.cur.OldPath, p.cur.NewPath, p.headerPaths = old, new, true
	case strings.HasPrefix(l, "@@"):
		if p.cur == nil || (!p.headerPaths && p.cur.OldPath != "" && p.cur.NewPath != "") {
			return p.errorf("hunk before a --- and +++ file header")
		}
		h, err := p.hunk()
		if err != nil {
			return err
		}
		p.cur.Hunks = append(p.cur.Hunks, h)
		return nil
	case p.cur != nil && len(p.cur.Hunks) == 0:
		if err := p.extendedHeader(l); err != nil {
			return err
		}
	}
	p.i++
	return nil
}

// extendedHeader reads the git lines between "diff --git" and "---".
func (p *patchParser) extendedHeader(l string) error {
	word := func(prefix string) (string, bool) { return strings.CutPrefix(l, prefix) }
	if m, ok := word("new file mode "); ok {
		p.cur.OldPath = ""
		return p.mode(m)
	}
	if _, ok := word("deleted file mode "); ok {
		p.cur.NewPath = ""
		return nil
	}
	if m, ok := word("new mode "); ok {
		return p.mode(m)
	}
	for _, unsupported := range []string{"rename from ", "rename to ", "copy from ", "copy to ", "GIT binary patch", "Binary files "} {
		if strings.HasPrefix(l, unsupported) {
			return p.errorf("%q: renames, copies and binary patches are not supported", l)
		}
	}
	return nil
}

func (p *patchParser) mode(s string) error {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m&0o170000 != 0o100000 {
		return p.errorf("mode %q is not a regular file mode", s)
	}
	p.cur.Mode = fs.FileMode(m & 0o777)
	return nil
}

// finish closes the current file section.
func (p *patchParser) finish() error {
	f := p.cur
	p.cur, p.headerPaths = nil, false
	if f == nil {
		return nil
	}
	if f.OldPath == "" && f.NewPath == "" {
		// "new file mode" and "deleted file mode" in one section leave no
		// name at all; applying it would act on the directory itself.
		return &PatchError{Line: p.i, Msg: "a file section that is both new and deleted"}
	}
	if len(f.Hunks) == 0 && !f.IsNew() && !f.IsDelete() && f.Mode == 0 {
		return &PatchError{Path: f.Path(), Line: p.i, Msg: "no hunks for this file"}
	}
	if f.OldPath != "" && f.NewPath != "" && f.OldPath != f.NewPath {
		return &PatchError{Path: f.NewPath, Line: p.i, Msg: fmt.Sprintf("renamed from %s: renames are not supported", f.OldPath)}
	}
	p.out = append(p.out, *f)
	return nil
}

// hunk reads one @@ section, starting at its header line.
func (p *patchParser) hunk() (Hunk, error) {
	h := Hunk{Header: p.line()}
	var err error
	if h.OldStart, h.OldLines, h.NewStart, h.NewLines, err = parseHunkHeader(h.Header); err != nil {
		return h, p.errorf("%v", err)
	}
	oldLeft, newLeft := h.OldLines, h.NewLines
	for p.i++; oldLeft > 0 || newLeft > 0; p.i++ {
		if p.i >= len(p.lines) {
			return h, p.errorf("the patch ends inside the hunk %q", h.Header)
		}
		raw := p.lines[p.i]
		op, text := raw[0], raw[1:]
		if raw == "\n" || raw == "\r\n" {
			// A context line whose leading space an editor stripped.
			op, text = ' ', raw
		}
		switch op {
		case ' ':
			oldLeft--
			newLeft--
		case '-':
			oldLeft--
		case '+':
			newLeft--
		case '\\':
			if err := p.noNewline(&h); err != nil {
				return h, err
			}
			continue
		default:
			return h, p.errorf("%q is not a hunk line (want ' ', '-', '+' or '\\')", strings.TrimRight(raw, "\r\n"))
		}
		if oldLeft < 0 || newLeft < 0 {
			return h, p.errorf("more lines than the hunk header %q counts", h.Header)
		}
		h.Lines = append(h.Lines, HunkLine{Op: op, Text: text})
	}
	if p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "\\") {
		if err := p.noNewline(&h); err != nil {
			return h, err
		}
		p.i++
	}
	return h, nil
}

// noNewline applies a "\ No newline at end of file" marker to the line
// before it.
func (p *patchParser) noNewline(h *Hunk) error {
	if len(h.Lines) == 0 {
		return p.errorf("%q before any hunk line", p.line())
	}
	last := &h.Lines[len(h.Lines)-1]
	last.Text = strings.TrimSuffix(last.Text, "\n")
	return nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@ ...".
func parseHunkHeader(l string) (oldStart, oldLines, newStart, newLines int, err error) {
	rest, ok := strings.CutPrefix(l, "@@ -")
	ranges, _, ok2 := strings.Cut(rest, " @@")
	oldR, newR, ok3 := strings.Cut(ranges, " +")
	if !ok || !ok2 || !ok3 {
		return 0, 0, 0, 0, fmt.Errorf("malformed hunk header %q", l)
	}
	if oldStart, oldLines, err = parseRange(oldR); err == nil {
		newStart, newLines, err = parseRange(newR)
	}
	if err != nil {
		err = fmt.Errorf("malformed hunk header %q: %v", l, err)
	}
	return
}

func parseRange(s string) (start, lines int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	lines = 1
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad line number %q", a)
	}
	if hasCount {
		if lines, err = strconv.Atoi(b); err != nil || lines < 0 {
			return 0, 0, fmt.Errorf("bad line count %q", b)
		}
	}
	return start, lines, nil
}

// headerPath reads the path of a --- or +++ line: "" for /dev/null, the
// prefix (a/ or b/) removed, a trailing tab and timestamp dropped, git's
// C-style quoting undone.
func headerPath(s, prefix string) (string, error) {
	if t, _, ok := strings.Cut(s, "\t"); ok {
		s = t
	}
	s = strings.TrimRight(s, " \r")
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("bad quoted path %s", s)
		}
		s = u
	}
	if s == "/dev/null" {
		return "", nil
	}
	s = strings.TrimPrefix(s, prefix)
	if s == "" {
		return "", fmt.Errorf("empty path")
	}
	return s, nil
}

// splitGitHeader reads the "a/X b/Y" of a diff --git line. With spaces in
// the names the split is ambiguous; the --- and +++ lines that follow (if
// any) override it.
func splitGitHeader(s string) (old, new string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		// Quoted names: "a/x y" "b/x y".
		if end := strings.Index(s[1:], `" `); end >= 0 {
			a, errA := headerPath(s[:end+2], "a/")
			b, errB := headerPath(strings.TrimSpace(s[end+2:]), "b/")
			return a, b, errA == nil && errB == nil
		}
		return "", "", false
	}
	// The same name on both sides: split in the middle.
	if n := len(s); n%2 == 1 {
		a, b := s[:n/2], s[n/2+1:]
		if s[n/2] == ' ' && strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return a[2:], b[2:], a[2:] != ""
		}
	}
	i := strings.LastIndex(s, " b/")
	if i < 0 || !strings.HasPrefix(s, "a/") {
		return "", "", false
	}
	return s[2:i], s[i+3:], i > 2 && i+3 < len(s)
}
