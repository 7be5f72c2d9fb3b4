package call

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/tools"
)

// creatable are the missing write paths of p that sbx creates on approval:
// those inside a tool's cache or state directory (tools.Table, placed by
// the command's environment env). Any other missing path stays refused by
// policy.Build ("grant its parent directory").
func creatable(env []string, ps ...profiles.Profile) []string {
	// Placing the table's directories resolves each against the
	// environment and the file system (~60 us, 2% of a server's CPU per
	// call): done only once a write path is missing, which most calls
	// have none of.
	var roots *tools.Roots
	var out []string
	for _, p := range ps {
		for _, w := range p.WritePaths() {
			if fspath.Exists(w) {
				continue
			}
			if roots == nil {
				r := tools.Resolve(env)
				roots = &r
			}
			if roots.Contains(w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// createDirs makes each missing path of want (and its missing parents) as the calling user, before the command starts, and
// returns the ones it made. Each is made through an os.Root opened on its
// nearest existing ancestor, so that a symbolic link planted on the way
// cannot lead the creation outside that ancestor.
//
// IMPORTANT: a symbolic link inside the ancestor that points elsewhere
// inside it is followed, as os.Root allows; the ancestor itself was
// resolved when the request was normalised.
func createDirs(want []string) ([]string, error) {
	var made []string
	for _, w := range want {
		if fspath.Exists(w) {
			continue
		}
		base := w
		for !fspath.Exists(base) && base != "/" {
			base = filepath.Dir(base)
		}
		rel, err := filepath.Rel(base, w)
		if err != nil {
			return made, fmt.Errorf("create %s: %w", w, err)
		}
		root, err := os.OpenRoot(base)
		if err != nil {
			return made, fmt.Errorf("create %s: %w", w, err)
		}
		// 0o777 less the umask, as the tool itself would make it.
		err = root.MkdirAll(rel, 0o777)
		root.Close()
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return made, fmt.Errorf("create %s: %w", w, err)
		}
		made = append(made, w)
	}
	return made, nil
}

// ToolProfile is the smallest profile with which the named tools work
// (tools.Table): their cache and state directories writable, placed by the
// command's environment env (sbx makes a missing one, as for any granted
// tool directory), and their registry domains reachable through the
// proxy. An unknown name is an error naming tools[i].
func ToolProfile(names, env []string, cwd string) (profiles.Profile, error) {
	if len(names) == 0 {
		return profiles.Profile{}, nil
	}
	roots := tools.Resolve(env)
	var write, domains []string
	for i, n := range names {
		t, ok := tools.ByName(n)
		if !ok {
			var known []string
			for _, t := range tools.Table {
				known = append(known, t.Name)
			}
			return profiles.Profile{}, &strictjson.FieldError{Field: fmt.Sprintf("tools[%d]", i), Err: fmt.Errorf("unknown tool %q (known: %s)", n, strings.Join(known, ", "))}
		}
		for _, r := range roots.Dirs {
			if r.Tool == t.Name {
				write = append(write, r.Path)
			}
		}
		domains = append(domains, t.Domains...)
	}
	var n *profiles.Network
	if len(domains) > 0 {
		n = &profiles.Network{Enabled: true, AllowedDomains: domains}
	}
	p, err := profiles.New(n, nil, write).Normalize(cwd)
	if err != nil {
		return profiles.Profile{}, &strictjson.FieldError{Field: "tools", Err: err}
	}
	return p, nil
}
