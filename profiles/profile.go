package profiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Profile is a permission profile: permissions added on top of a sandbox
// mode. The zero value requests nothing.
type Profile struct {
	Network    *Network    `json:"network,omitempty"`
	FileSystem *FileSystem `json:"file_system,omitempty"`
}

// Network is the network part of a profile. On the wire "enabled" is
// required (DecodeStrict refuses {"network": {}}), as the schemas say: an
// empty object asking for nothing is more likely a mistake than a choice.
type Network struct {
	Enabled bool `json:"enabled" strict:"required"`
}

// FileSystem lists extra readable and writable paths. Write implies read.
type FileSystem struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// DecodeProfile decodes a profile from strict JSON.
func DecodeProfile(data []byte) (Profile, error) {
	var p Profile
	if err := DecodeStrict(data, &p); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// NetworkEnabled reports whether the profile asks for network access.
func (p Profile) NetworkEnabled() bool { return p.Network != nil && p.Network.Enabled }

// ReadPaths returns the profile's read paths (not including write paths).
func (p Profile) ReadPaths() []string {
	if p.FileSystem == nil {
		return nil
	}
	return p.FileSystem.Read
}

// WritePaths returns the profile's write paths.
func (p Profile) WritePaths() []string {
	if p.FileSystem == nil {
		return nil
	}
	return p.FileSystem.Write
}

// IsEmpty reports whether the profile requests nothing. Call it on a
// normalised profile: "network": {"enabled": false} and empty lists are empty.
func (p Profile) IsEmpty() bool {
	return !p.NetworkEnabled() && len(p.ReadPaths()) == 0 && len(p.WritePaths()) == 0
}

// Build makes a normalised profile from its parts; nil for empty lists.
func Build(network bool, read, write []string) Profile {
	var p Profile
	if network {
		p.Network = &Network{Enabled: true}
	}
	write = fold(write)
	read = fold(subtractCovered(read, write))
	if len(read) > 0 || len(write) > 0 {
		p.FileSystem = &FileSystem{Read: read, Write: write}
	}
	return p
}

// Normalize resolves relative paths against cwd (which must be absolute),
// cleans them, resolves symlinks in the part of each path that exists (the
// kernel enforces the object a path names, not its spelling), and folds
// duplicates and paths covered by another of the same or wider access.
// A path that does not exist is kept, resolved as far as it exists: whether a
// missing path is acceptable is the caller's decision.
func (p Profile) Normalize(cwd string) (Profile, error) {
	if !filepath.IsAbs(cwd) {
		return Profile{}, fmt.Errorf("cwd %q: not an absolute path", cwd)
	}
	read, err := resolveAll(p.ReadPaths(), cwd, "file_system.read")
	if err != nil {
		return Profile{}, err
	}
	write, err := resolveAll(p.WritePaths(), cwd, "file_system.write")
	if err != nil {
		return Profile{}, err
	}
	return Build(p.NetworkEnabled(), read, write), nil
}

func resolveAll(paths []string, cwd, field string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for i, raw := range paths {
		r, err := ResolvePath(raw, cwd)
		if err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		out = append(out, r)
	}
	return out, nil
}

// ResolvePath makes raw absolute against cwd, cleans it and resolves the
// symlinks of its longest existing prefix.
func ResolvePath(raw, cwd string) (string, error) {
	if raw == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(raw, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	p := raw
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return ResolveExisting(filepath.Clean(p)), nil
}

// ResolveExisting resolves symlinks in the longest prefix of p that exists
// and appends the rest unchanged.
func ResolveExisting(p string) string {
	rest := ""
	cur := p
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether p is base or below it. Both must be clean and absolute.
func Within(p, base string) bool {
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// CoveredBy reports whether p is within any of bases.
func CoveredBy(p string, bases []string) bool {
	for _, b := range bases {
		if Within(p, b) {
			return true
		}
	}
	return false
}

// fold sorts, de-duplicates and drops paths covered by another in the list.
func fold(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	s := append([]string(nil), paths...)
	sort.Strings(s)
	var out []string
	for _, p := range s {
		if CoveredBy(p, out) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func subtractCovered(paths, by []string) []string {
	var out []string
	for _, p := range paths {
		if !CoveredBy(p, by) {
			out = append(out, p)
		}
	}
	return out
}

// Exists reports whether path names an existing object (following symlinks).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
