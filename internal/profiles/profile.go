package profiles

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Profile is a permission profile: permissions added on top of a sandbox
// mode. The zero value requests nothing.
type Profile struct {
	Network    *Network    `json:"network,omitempty"`
	FileSystem *FileSystem `json:"file_system,omitempty"`
}

// Network is the network part of a profile. On the wire "enabled" is
// required (strictjson.Decode refuses {"network": {}}), as the schemas say: an
// empty object asking for nothing is more likely a mistake than a choice.
//
// With allowed_domains empty, enabled means every address (today's
// meaning: "full network"). With allowed_domains non-empty the network is
// reached through sbx's proxy only, and only for the hosts the patterns
// match (netrule.Pattern); enabled must then be true. denied_domains narrows:
// a host it matches is refused even when allowed_domains matches it too
// (deny beats allow), and it may stand with enabled false (it asks for
// nothing). allow_private_addresses lets an allowed name reach loopback,
// link-local, private and unique-local addresses through the proxy; it
// needs enabled true.
type Network struct {
	Enabled               bool     `json:"enabled" strict:"required"`
	AllowedDomains        []string `json:"allowed_domains,omitempty"`
	DeniedDomains         []string `json:"denied_domains,omitempty"`
	AllowPrivateAddresses bool     `json:"allow_private_addresses,omitempty"`
}

// NetworkMode says how a profile asks for the network.
type NetworkMode int

const (
	// NetworkNone asks for no network.
	NetworkNone NetworkMode = iota
	// NetworkDomains asks for the hosts of allowed_domains, through the proxy.
	NetworkDomains
	// NetworkAll asks for every address (enabled, no allowed_domains).
	NetworkAll
)

func (m NetworkMode) String() string {
	switch m {
	case NetworkDomains:
		return "domains"
	case NetworkAll:
		return "all"
	}
	return "none"
}

// FileSystem lists extra readable and writable paths. Write implies read.
// DenyRead and DenyWrite are patterns (Glob) of paths that may not be read
// (nor written) or written: they only narrow, never widen anything, and
// they ask for nothing (IsEmpty ignores them); see deny.go.
type FileSystem struct {
	Read      []string `json:"read,omitempty" kind:"path"`
	Write     []string `json:"write,omitempty" kind:"path"`
	DenyRead  []string `json:"deny_read,omitempty"`
	DenyWrite []string `json:"deny_write,omitempty"`
}

// DecodeProfile decodes a profile from strict JSON.
func DecodeProfile(data []byte) (Profile, error) {
	var p Profile
	if err := strictjson.Decode(data, &p); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// NetworkEnabled reports whether the profile asks for full network access:
// enabled without allowed_domains. A profile that asks for some domains
// only is not "network enabled" (NetworkMode says NetworkDomains), so that
// code written before domains existed never reads a domain grant as the
// whole network.
func (p Profile) NetworkEnabled() bool { return p.NetworkMode() == NetworkAll }

// NetworkMode says whether the profile asks for no network, some domains or
// every address.
func (p Profile) NetworkMode() NetworkMode {
	switch {
	case p.Network == nil || !p.Network.Enabled:
		return NetworkNone
	case len(p.Network.AllowedDomains) > 0:
		return NetworkDomains
	}
	return NetworkAll
}

// AllowedDomains returns network.allowed_domains.
func (p Profile) AllowedDomains() []string {
	if p.Network == nil {
		return nil
	}
	return p.Network.AllowedDomains
}

// DeniedDomains returns network.denied_domains.
func (p Profile) DeniedDomains() []string {
	if p.Network == nil {
		return nil
	}
	return p.Network.DeniedDomains
}

// AllowPrivateAddresses reports network.allow_private_addresses with
// network enabled.
func (p Profile) AllowPrivateAddresses() bool {
	return p.Network != nil && p.Network.Enabled && p.Network.AllowPrivateAddresses
}

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
// normalised profile: "network": {"enabled": false} and empty lists are
// empty, and so is a profile with only denied_domains (it narrows, it asks
// for nothing).
func (p Profile) IsEmpty() bool {
	return p.NetworkMode() == NetworkNone && len(p.ReadPaths()) == 0 && len(p.WritePaths()) == 0
}

// FullNetwork is the network part of a profile that asks for the whole
// network (enabled, no domain lists).
func FullNetwork() *Network { return &Network{Enabled: true} }

// New makes a normalised profile from its parts; nil for empty lists. n nil
// is no network. The network part's domain lists are canonicalised and
// folded (entries must be valid patterns: an invalid one is dropped, so
// validate first, as Normalize does), and a network part that says nothing
// is dropped.
func New(n *Network, read, write []string) Profile {
	var p Profile
	p.Network = foldNetwork(n)
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
	if _, _, err := validateNetwork(p.Network); err != nil {
		return Profile{}, err
	}
	dr, dw, err := normalizeDenies(p)
	if err != nil {
		return Profile{}, err
	}
	return withDenies(New(p.Network, read, write), dr, dw), nil
}

// validateNetwork refuses invalid patterns and the combinations whose
// meaning would be a guess, and returns the patterns parsed: the edge of
// a profile's network, where its text is parsed (once). Errors name the
// field.
func validateNetwork(n *Network) (allowed, denied []netrule.Pattern, err error) {
	if n == nil {
		return nil, nil, nil
	}
	if allowed, err = ParseDomainPatterns(n.AllowedDomains, "network.allowed_domains"); err != nil {
		return nil, nil, err
	}
	if denied, err = ParseDomainPatterns(n.DeniedDomains, "network.denied_domains"); err != nil {
		return nil, nil, err
	}
	if !n.Enabled && len(n.AllowedDomains) > 0 {
		return nil, nil, &strictjson.FieldError{Field: "network.allowed_domains", Err: errors.New("needs network.enabled: true")}
	}
	if !n.Enabled && n.AllowPrivateAddresses {
		return nil, nil, &strictjson.FieldError{Field: "network.allow_private_addresses", Err: errors.New("needs network.enabled: true")}
	}
	return allowed, denied, nil
}

// foldNetwork returns n's canonical form: full network drops its allowed
// list (there is none), domain lists are folded, and nil when nothing is
// left (not enabled, nothing denied).
func foldNetwork(n *Network) *Network {
	if n == nil {
		return nil
	}
	out := &Network{
		Enabled:        n.Enabled,
		AllowedDomains: foldDomains(Patterns(n.AllowedDomains)),
		DeniedDomains:  foldDomains(Patterns(n.DeniedDomains)),
	}
	if len(n.AllowedDomains) > 0 && len(out.AllowedDomains) == 0 {
		// Every entry was invalid: never let that read as full network.
		out.Enabled = false
	}
	out.AllowPrivateAddresses = out.Enabled && n.AllowPrivateAddresses
	if !out.Enabled && len(out.DeniedDomains) == 0 {
		return nil
	}
	return out
}

func resolveAll(paths []string, cwd, field string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for i, raw := range paths {
		r, err := fspath.ResolvePath(raw, cwd)
		if err != nil {
			return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		out = append(out, r)
	}
	return out, nil
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
		if fspath.CoveredBy(p, out) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func subtractCovered(paths, by []string) []string {
	var out []string
	for _, p := range paths {
		if !fspath.CoveredBy(p, by) {
			out = append(out, p)
		}
	}
	return out
}
