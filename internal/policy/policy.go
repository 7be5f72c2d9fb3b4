package policy

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enum"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Network says what the sandboxed process may reach.
type Network int

const (
	// NetworkIsolated: no network beyond a private loopback.
	NetworkIsolated Network = iota
	// NetworkFull: the host's network.
	NetworkFull
)

var networkNames = enum.Names[Network]{Type: "Network", What: "network", Names: []string{"isolated", "full"}}

func (n Network) String() string { return networkNames.String(n) }

func (n Network) MarshalText() ([]byte, error) { return networkNames.Marshal(n) }

func (n *Network) UnmarshalText(b []byte) error { return networkNames.Unmarshal(n, b) }

// Policy is the platform-neutral description of one call's sandbox.
type Policy struct {
	Mode profiles.Mode `json:"mode"`
	// Unrestricted is true for danger-full-access: no file system, network or
	// syscall rules at all.
	Unrestricted bool `json:"unrestricted"`
	// ReadRoots are readable trees. Every mode reads the whole file system
	// today ("/"), so this is ["/"] unless a future mode narrows reads.
	ReadRoots []string `json:"read_roots"`
	// WriteRoots are writable trees.
	WriteRoots []string `json:"write_roots"`
	// CarveOuts are subpaths of write roots that stay read-only. They may not
	// exist yet: creating them must fail too.
	CarveOuts []string `json:"read_only"`
	// Devices are device files a shell needs to write even in read-only mode.
	Devices []string `json:"devices"`
	// Terminal is the pty slave the command runs on (sbx run --pty, exec
	// "pty"). When set, it is the only terminal the command may open,
	// instead of the ones behind sbx's own standard streams.
	Terminal string  `json:"terminal,omitempty"`
	Network  Network `json:"network"`
	// Masked are paths that may be neither read nor written (the guard's
	// deny-read list); a backend hides them.
	Masked []string `json:"masked,omitempty"`
	// Unreported are the paths of Masked whose reads a backend need not
	// report: sbx serve's own state directory (control plane), which the
	// report names among its carve-outs once, not at every access. A
	// backend that would watch every open only to report reads of these
	// (the supervisor: ~30 us an open) does not, and the mask alone keeps
	// their content out.
	Unreported []string `json:"unreported,omitempty"`
	// DenyGlobs are the deny patterns (guard and profiles) anchored at
	// absolute roots: their existing matches are already in Masked or
	// CarveOuts (ExpandDenies); a backend refuses creating new ones where
	// it can, and reports where it cannot.
	DenyGlobs []DenyGlob `json:"deny_globs,omitempty"`
	// DenyUnscanned are the deny patterns whose existing matches were not
	// all found (the walk's bound, an unreadable directory): a backend
	// reports them as the deny-glob-scan downgrade.
	DenyUnscanned []SkippedPath `json:"deny_unscanned,omitempty"`
	// Skipped lists implicit roots left out because they do not exist.
	Skipped []SkippedPath `json:"skipped,omitempty"`
	// Capabilities are the Linux capabilities the command keeps (--cap-add,
	// canonical names); every other one is dropped, root's included.
	Capabilities []string `json:"capabilities,omitempty"`
	// ProtectedNames are the names kept read-only in every writable root
	// (DefaultProtected unless the caller removed them, plus --protect):
	// the effective list, for the report.
	ProtectedNames []string `json:"protected_names,omitempty"`
	// Domains, when not nil, is network by domain (allowed_domains): Network
	// stays NetworkIsolated, so the command's namespace has only loopback,
	// and sbx's proxy, listening inside it, reaches the hosts Domains
	// allows from sbx's own namespace (docs/network.md).
	Domains *Domains `json:"domains,omitempty"`
}

// SkippedPath is an implicit root that was not granted, and why.
type SkippedPath struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Request is what Build needs to make a Policy.
type Request struct {
	Mode profiles.Mode
	// Cwd is the absolute working directory of the call.
	Cwd string
	// WritableRoots are extra writable directories (workspace-write only).
	WritableRoots []string
	// ExcludeTmp leaves /tmp out of the writable roots; ExcludeTmpdir $TMPDIR.
	ExcludeTmp    bool
	ExcludeTmpdir bool
	// Tmpdir is the value of $TMPDIR for the call ("" if unset).
	Tmpdir string
	// ExtraCarveOuts are configured carve-outs beyond the protected names,
	// relative to each writable root or absolute.
	ExtraCarveOuts []string
	// Protect are names added to DefaultProtected (--protect, "protect");
	// NoDefaultProtect drops the defaults (--no-default-protect), which the
	// report says.
	Protect          []string
	NoDefaultProtect bool
	// Additional is the effective, normalised additional permission profile.
	Additional profiles.Profile
	// Capabilities are the Linux capabilities the command keeps (see
	// Policy.Capabilities).
	Capabilities []string
	// Resolve pins names for the proxy of a network-by-domain call
	// (Domains.Resolve); ignored without allowed_domains.
	Resolve []netrule.Resolve
	// Create are additional write paths that may be missing: the caller
	// creates them once the call is approved, and builds again (a tool's
	// cache root: call.Prepare). Build keeps such a path as a write root
	// without its carve-outs; it is not a policy to launch.
	Create []string
}

// DefaultProtected are the names every writable root keeps read-only, as
// Codex does: the repository's .git (its hooks and config run code the next
// time anyone uses git) and the agent configuration directories .codex and
// .agents, which a model could otherwise rewrite to persist itself past the
// call. A missing one is protected against creation too (see
// Policy.CarveOuts).
var DefaultProtected = []string{".git", ".codex", ".agents"}

// ProtectedNames is the effective list of protected names: the defaults
// (unless noDefault) and extra, in that order, without repeats. Each extra
// name must be one path component; field names the request field at fault.
func ProtectedNames(extra []string, noDefault bool, field string) ([]string, error) {
	var out []string
	if !noDefault {
		out = slices.Clone(DefaultProtected)
	}
	for i, n := range extra {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
			return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: fmt.Errorf("%q is not a name: one path component, not . or .., without / or NUL", n)}
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// DefaultDevices are the device files any mode may write: shells redirect to
// /dev/null and read /dev/zero, and a command must keep its terminal.
var DefaultDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// Build validates req and derives the Policy. Explicit paths (cwd, writable
// roots, additional write paths) must exist and be directories where a
// directory is needed; implicit roots (/tmp, $TMPDIR) that do not exist are
// listed in Skipped.
func Build(req Request) (Policy, error) {
	if !filepath.IsAbs(req.Cwd) {
		return Policy{}, &strictjson.FieldError{Field: "cwd", Err: fmt.Errorf("%q is not an absolute path", req.Cwd)}
	}
	if err := requireDir(req.Cwd); err != nil {
		return Policy{}, &strictjson.FieldError{Field: "cwd", Err: err}
	}
	pol := Policy{
		Mode:         req.Mode,
		ReadRoots:    []string{"/"},
		Devices:      DefaultDevices,
		Network:      NetworkIsolated,
		Capabilities: req.Capabilities,
	}
	var err error
	if pol.Network, pol.Domains, err = buildNetwork(req); err != nil {
		return Policy{}, err
	}
	// write are all writable trees; repos are the ones whose .git is
	// protected (not /tmp and $TMPDIR, which are scratch space).
	var write, repos []string
	switch req.Mode {
	case profiles.DangerFullAccess:
		pol.Unrestricted = true
		pol.Network = NetworkFull
		pol.Domains = nil
		pol.WriteRoots = []string{"/"}
		return pol, nil
	case profiles.WorkspaceWrite:
		cwd, _ := fspath.ResolvePath(req.Cwd, "/")
		write = append(write, cwd)
		repos = append(repos, cwd)
		for i, r := range req.WritableRoots {
			abs, err := fspath.ResolvePath(r, req.Cwd)
			if err == nil {
				err = requireDir(abs)
			}
			if err != nil {
				return Policy{}, &strictjson.FieldError{Field: fmt.Sprintf("writable_roots[%d]", i), Err: err}
			}
			write = append(write, abs)
			repos = append(repos, abs)
		}
		if !req.ExcludeTmp {
			write = appendImplicit(&pol, write, "/tmp")
		}
		if !req.ExcludeTmpdir && req.Tmpdir != "" {
			write = appendImplicit(&pol, write, req.Tmpdir)
		}
	case profiles.ReadOnly:
		if len(req.WritableRoots) > 0 {
			return Policy{}, &strictjson.FieldError{Field: "writable_roots", Err: errors.New("only valid with sandbox mode workspace-write")}
		}
	default:
		return Policy{}, &strictjson.FieldError{Field: "sandbox_mode", Err: fmt.Errorf("invalid mode %d", req.Mode)}
	}
	for i, w := range req.Additional.WritePaths() {
		if !filepath.IsAbs(w) {
			return Policy{}, &strictjson.FieldError{Field: fmt.Sprintf("additional_permissions.file_system.write[%d]", i), Err: errors.New("not normalised: relative path")}
		}
		if !fspath.Exists(w) && slices.Contains(req.Create, w) {
			write = append(write, w)
			continue
		}
		if !fspath.Exists(w) {
			return Policy{}, &strictjson.FieldError{Field: fmt.Sprintf("additional_permissions.file_system.write[%d]", i), Err: fmt.Errorf("%s does not exist (grant its parent directory to allow creating it)", w)}
		}
		write = append(write, w)
		if fi, err := os.Stat(w); err == nil && fi.IsDir() {
			repos = append(repos, w)
		}
	}
	for i, r := range req.Additional.ReadPaths() {
		if !fspath.Exists(r) {
			return Policy{}, &strictjson.FieldError{Field: fmt.Sprintf("additional_permissions.file_system.read[%d]", i), Err: fmt.Errorf("%s does not exist", r)}
		}
	}
	norm := profiles.New(nil, nil, write)
	pol.WriteRoots = norm.WritePaths()
	names, err := ProtectedNames(req.Protect, req.NoDefaultProtect, "protect")
	if err != nil {
		return Policy{}, err
	}
	pol.ProtectedNames = names
	pol.CarveOuts = narrowGit(carveOuts(repos, pol.WriteRoots, names, req.ExtraCarveOuts), req.Additional.WritePaths())
	return pol, nil
}

func appendImplicit(pol *Policy, write []string, path string) []string {
	abs, err := fspath.ResolvePath(path, "/")
	if err == nil {
		err = requireDir(abs)
	}
	if err != nil {
		pol.Skipped = append(pol.Skipped, SkippedPath{Path: path, Reason: err.Error()})
		return write
	}
	return append(write, abs)
}

func requireDir(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist", p)
		}
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", p)
	}
	return nil
}

// carveOuts lists the read-only subpaths of each repo root: each protected
// name (whatever it is, or where it would be created), where a symlink of
// that name points, the gitdir a .git file names, and the configured
// extras. Only those inside a write root need protecting; the rest is
// read-only anyway.
func carveOuts(repos, writeRoots, names, extra []string) []string {
	var out []string
	add := func(p string) {
		if fspath.CoveredBy(p, writeRoots) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, root := range repos {
		if root == "/" {
			continue
		}
		for _, name := range names {
			p := filepath.Join(root, name)
			add(p)
			if target, err := filepath.EvalSymlinks(p); err == nil && target != p {
				add(target)
			}
			// A .git file (git worktree, submodules) says where the
			// repository's metadata lives: that is protected too.
			if name != ".git" {
				continue
			}
			if gitdir := readGitdirFile(p); gitdir != "" {
				add(gitdir)
			}
		}
		for _, e := range extra {
			if filepath.IsAbs(e) {
				add(filepath.Clean(e))
			} else {
				add(filepath.Join(root, e))
			}
		}
	}
	return out
}

// readGitdirFile returns the resolved target of a "gitdir: PATH" file (as
// written by git worktree and submodules), or "".
func readGitdirFile(path string) string {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	r, err := fspath.ResolvePath(strings.TrimSpace(target), filepath.Dir(path))
	if err != nil {
		return ""
	}
	return r
}
