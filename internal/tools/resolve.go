package tools

import (
	"path/filepath"
	"strings"
)

// Root is a table directory resolved for one call.
type Root struct {
	Tool string
	Kind Kind
	Path string
}

// Roots are the table resolved against one call's environment.
type Roots struct {
	// Home is the call's HOME ("" when unset or relative).
	Home  string
	Dirs  []Root
	never []Root
}

// Resolve places every directory of the table for a call with environment
// env (KEY=VALUE entries, as exec takes them). The directories on the
// call's PATH are never-grant entries too: anything written there runs
// later, outside the sandbox, by name.
func Resolve(env []string) Roots {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	r := Roots{Home: absOrEmpty(get("HOME"))}
	for _, t := range Table {
		for _, d := range t.Dirs {
			if p := r.place(d, get); p != "" {
				r.Dirs = append(r.Dirs, Root{Tool: t.Name, Kind: d.Kind, Path: p})
			}
		}
		for _, d := range t.Never {
			if p := r.place(d, get); p != "" {
				r.never = append(r.never, Root{Tool: t.Name, Path: p})
			}
		}
	}
	for _, p := range filepath.SplitList(get("PATH")) {
		if p = absOrEmpty(p); p != "" && p != "/" {
			r.never = append(r.never, Root{Tool: "PATH", Path: p})
		}
	}
	return r
}

// place returns where d is for this call, or "" when nowhere: a default
// under an unknown HOME, or a place that is HOME, "/" or an ancestor of HOME
// (no variable makes the whole home directory a tool's root).
func (r Roots) place(d Dir, get func(string) string) string {
	p := ""
	for _, l := range d.Locations {
		v := get(l.Var)
		if l.Var == "GOPATH" {
			v, _, _ = strings.Cut(v, string(filepath.ListSeparator))
		}
		if v = absOrEmpty(v); v != "" {
			p = filepath.Join(v, l.Sub)
			break
		}
	}
	if p == "" {
		rest, ok := strings.CutPrefix(d.Default, "~/")
		if !ok || r.Home == "" {
			return ""
		}
		p = filepath.Join(r.Home, rest)
	}
	if p == "/" || (r.Home != "" && within(r.Home, p)) {
		return ""
	}
	return p
}

// Root returns the deepest table directory that p lies in (p itself or
// below it).
func (r Roots) Root(p string) (Root, bool) {
	return deepest(r.Dirs, p)
}

// Never returns the never-grant entry that p lies in, or that lies in p
// (granting a parent of ~/.cargo/bin grants it too).
//
// A directory from PATH counts only for itself, its ancestors and the
// names directly in it (a program there runs by name): a PATH that holds
// HOME does not make every directory below HOME ungrantable.
func (r Roots) Never(p string) (Root, bool) {
	var table []Root
	for _, n := range r.never {
		if n.Tool != "PATH" {
			table = append(table, n)
		} else if p == n.Path || filepath.Dir(p) == n.Path {
			return n, true
		}
	}
	if n, ok := deepest(table, p); ok {
		return n, true
	}
	for _, n := range r.never {
		if within(n.Path, p) {
			return n, true
		}
	}
	return Root{}, false
}

// Contains reports whether p is a table directory or lies below one: a
// place sbx may create on approval.
func (r Roots) Contains(p string) bool {
	_, ok := r.Root(p)
	return ok
}

func deepest(rs []Root, p string) (Root, bool) {
	best, found := Root{}, false
	for _, x := range rs {
		if within(p, x.Path) && (!found || len(x.Path) > len(best.Path)) {
			best, found = x, true
		}
	}
	return best, found
}

// within reports whether p is base or lies below it (clean absolute paths).
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}

func absOrEmpty(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

// ByName returns the table row of the tool called name.
func ByName(name string) (Tool, bool) {
	for _, t := range Table {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Below returns the table directories that lie strictly below p: the roots
// a command creating p was on its way to.
func (r Roots) Below(p string) []Root {
	var out []Root
	for _, x := range r.Dirs {
		if x.Path != p && within(x.Path, p) {
			out = append(out, x)
		}
	}
	return out
}
