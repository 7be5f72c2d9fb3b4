package darwin

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
)

// PathMode says how Compile canonicalises the Policy's paths. Seatbelt
// matches the real path of the vnode an operation touches, so a rule for
// /tmp/x never matches: the file is /private/tmp/x.
type PathMode int

const (
	// PathsStatic applies only the fixed /tmp, /var, /etc -> /private/...
	// mapping, without touching the file system. Used off darwin (the golden
	// tests) where the host's symlinks say nothing about a Mac's.
	PathsStatic PathMode = iota
	// PathsResolve also resolves symlinks in the longest existing prefix of
	// each path, as the kernel will. The default on darwin.
	PathsResolve
)

func (m PathMode) String() string {
	if m == PathsResolve {
		return "resolve"
	}
	return "static"
}

// Options are the compile-time choices that are not part of the Policy.
type Options struct {
	Paths PathMode
}

// DefaultOptions resolves symlinks on darwin and applies only the static
// mapping elsewhere.
func DefaultOptions() Options {
	if runtime.GOOS == "darwin" {
		return Options{Paths: PathsResolve}
	}
	return Options{Paths: PathsStatic}
}

// WithPaths returns a copy of o with path mode m.
func (o Options) WithPaths(m PathMode) Options {
	o.Paths = m
	return o
}

// privateLinks are the top-level symlinks macOS ships, and where they point.
var privateLinks = []struct{ link, target, reason string }{
	{"/tmp", "/private/tmp", "/tmp is a symlink; files created there are /private/tmp/..."},
	{"/var", "/private/var", "/var is a symlink; $TMPDIR (/var/folders/...) lives under it"},
	{"/etc", "/private/etc", "/etc is a symlink; guard paths such as /etc/sudoers are /private/etc/..."},
}

// staticCanonical maps the privateLinks prefixes of a clean absolute path.
func staticCanonical(p string) string {
	for _, l := range privateLinks {
		if p == l.link || strings.HasPrefix(p, l.link+"/") {
			return l.target + p[len(l.link):]
		}
	}
	return p
}

// canonical returns the path Seatbelt sees for p: the object p names, with
// every symlink followed (PathsResolve) or only the static mapping applied.
func canonical(p string, m PathMode) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	c := filepath.Clean(p)
	if m == PathsResolve {
		// On a Mac this already yields /private/...; the static mapping
		// after it only matters off darwin, where the links do not exist.
		c = fspath.ResolveExisting(c)
	}
	return staticCanonical(c), nil
}

// canonicalNames returns the paths to protect for a carve-out or a masked
// path p: the name itself with its parent resolved (the link, if p is a
// symlink: unlinking or replacing it must fail) and, when different, the
// object it points to (reads and writes follow the link).
func canonicalNames(p string, m PathMode) ([]string, error) {
	full, err := canonical(p, m)
	if err != nil {
		return nil, err
	}
	c := filepath.Clean(p)
	if m != PathsResolve || c == "/" {
		return []string{full}, nil
	}
	name := staticCanonical(filepath.Join(fspath.ResolveExisting(filepath.Dir(c)), filepath.Base(c)))
	if name == full {
		return []string{full}, nil
	}
	return []string{name, full}, nil
}
