package escalate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// DefaultGuardPath is where the deployment guard lives when no --guard is
// given. A missing file there means an empty guard.
const DefaultGuardPath = "/etc/sbx/guard.json"

// defaultGuardPath is DefaultGuardPath, a variable so tests can point it away.
var defaultGuardPath = DefaultGuardPath

// Guard is the deployment's final, monotone layer (DESIGN.md rule 1): paths
// that may never be written or read, and network that may never be enabled.
// File format (strict JSON; absolute paths, or patterns with a wildcard):
//
//	{"deny_read": ["/etc/shadow", "**/.env"], "deny_write": ["/etc", "/home/*/.ssh"], "deny_network": true,
//	 "deny_domains": ["*.pastebin.com", "169.254.169.254"]}
//
// A deny_read path is never written either. An entry with "*", "?" or "["
// is a pattern (fspath.Glob; a relative one is matched below the call's
// cwd and each writable root): see DenyReadGlobs. deny_domains are domain
// patterns (netrule.ParsePattern) refused even when a call is
// granted them: they join a network-by-domain policy's denied list, and a
// full network becomes the proxy's, every host allowed but those (a client
// that ignores the proxy variables then has no network).
//
// IMPORTANT: backends hide a deny_read path by path (a mount on Linux), and
// paths name files, not inodes (DESIGN.md invariant 5): a hard link made
// earlier names the same content where no mask covers it. Deny-read of a
// file with several links is best effort: Linux reports it as a "mask-links"
// downgrade and its supervisor refuses opens of the other names; a deny_read
// directory that holds every name of the file covers them all.
type Guard struct {
	DenyRead    []string `json:"deny_read,omitempty"`
	DenyWrite   []string `json:"deny_write,omitempty"`
	DenyNetwork bool     `json:"deny_network,omitempty"`
	DenyDomains []string `json:"deny_domains,omitempty"`
	// DenyReadGlobs and DenyWriteGlobs are the entries of deny_read and
	// deny_write with a wildcard (fspath.Glob: "**/.env", "/home/*/.ssh"),
	// canonical; ParseGuard moves them out of the path lists. A relative
	// pattern is matched below the call's cwd and each writable root. Apply
	// does not see them: the call expands them (policy.ExpandDenies) into
	// paths and applies those as guard paths.
	DenyReadGlobs  []string `json:"-"`
	DenyWriteGlobs []string `json:"-"`
}

// LoadGuard reads the guard file at path. With path "" it reads
// DefaultGuardPath and a missing file is an empty guard; a file named
// explicitly must exist. Paths are resolved (symlinks in their existing part)
// because the kernel enforces the object, and write roots are resolved too.
func LoadGuard(path string) (Guard, error) {
	explicit := path != ""
	if !explicit {
		path = defaultGuardPath
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return Guard{}, nil
		}
		return Guard{}, fmt.Errorf("guard: %w", err)
	}
	g, err := ParseGuard(data)
	if err != nil {
		return Guard{}, fmt.Errorf("guard %s: %w", path, err)
	}
	return g, nil
}

// ParseGuard decodes and validates a guard file's contents.
func ParseGuard(data []byte) (Guard, error) {
	var g Guard
	if err := strictjson.Decode(data, &g); err != nil {
		return Guard{}, err
	}
	var err error
	if g.DenyRead, g.DenyReadGlobs, err = guardPaths(g.DenyRead, "deny_read"); err != nil {
		return Guard{}, err
	}
	if g.DenyWrite, g.DenyWriteGlobs, err = guardPaths(g.DenyWrite, "deny_write"); err != nil {
		return Guard{}, err
	}
	pats, err := profiles.ParseDomainPatterns(g.DenyDomains, "deny_domains")
	if err != nil {
		return Guard{}, err
	}
	g.DenyDomains = nil
	for _, p := range pats {
		g.DenyDomains = append(g.DenyDomains, p.String())
	}
	return g, nil
}

// guardPaths splits the entries of field into resolved paths and
// canonical patterns (those with a wildcard).
func guardPaths(entries []string, field string) (paths, globs []string, err error) {
	var plain []string
	for i, p := range entries {
		if !fspath.IsGlob(p) {
			plain = append(plain, p)
			continue
		}
		g, err := fspath.ParseGlob(p)
		if err != nil {
			return nil, nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		globs = append(globs, fspath.ResolveGlobPrefix(g).String())
	}
	if paths, err = resolveGuardPaths(plain, entries, field); err != nil {
		return nil, nil, err
	}
	slices.Sort(globs)
	return paths, slices.Compact(globs), nil
}

// resolveGuardPaths resolves the literal paths; errors name the entry's
// index in all.
func resolveGuardPaths(paths, all []string, field string) ([]string, error) {
	var out []string
	for _, p := range paths {
		i := slices.Index(all, p)
		if !filepath.IsAbs(p) {
			return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: fmt.Errorf("%q is not an absolute path", p)}
		}
		r, err := fspath.ResolvePath(p, "/")
		if err != nil {
			return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		out = append(out, r)
	}
	return foldPaths(out), nil
}

// IsEmpty reports whether the guard takes nothing away.
func (g Guard) IsEmpty() bool {
	return len(g.DenyRead) == 0 && len(g.DenyWrite) == 0 && !g.DenyNetwork && len(g.DenyDomains) == 0 && len(g.DenyReadGlobs) == 0 && len(g.DenyWriteGlobs) == 0
}

// WithPaths returns g with the paths read and write (absolute, resolved:
// the existing matches of deny patterns) added to its deny lists.
func (g Guard) WithPaths(read, write []string) Guard {
	out := g
	out.DenyRead = foldPaths(append(slices.Clone(g.DenyRead), read...))
	out.DenyWrite = foldPaths(append(slices.Clone(g.DenyWrite), write...))
	return out
}

// Removal is one thing the guard took away, for the report.
type Removal struct {
	// What is "unrestricted", "write_root", "carve_out" (made read-only),
	// "device", "read_root", "read" (masked) or "network".
	What   string `json:"what"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// Applied is a policy after the guard.
type Applied struct {
	Policy policy.Policy `json:"policy"`
	// MaskRead are paths the backend must make unreadable (and unwritable):
	// the guard's deny_read paths that a read root covers.
	//
	// IMPORTANT: Policy has no field for unreadable paths, so deny_read is
	// enforced only by a backend that masks MaskRead.
	MaskRead []string  `json:"mask_read,omitempty"`
	Removed  []Removal `json:"removed,omitempty"`
}

// Apply takes away from p what the guard denies. It is applied last, after
// the mode, grants and any approved escalation, and it is monotone: the result
// never has a write root, device, network or unrestricted flag that p lacks,
// and never a writable path that p did not have writable. Applying it twice
// gives the same policy.
//
//   - A danger-full-access policy loses Unrestricted when the guard restricts
//     anything, so that the backend enforces the rest.
//   - Write roots and devices inside a denied path are removed.
//   - Denied paths under a remaining write root become read-only carve-outs.
//   - deny_network turns the network off.
//   - deny_read paths are returned in MaskRead; read roots inside them go.
//
// IMPORTANT: a backend that ignores CarveOuts or MaskRead for a policy whose
// Mode is danger-full-access does not enforce the guard.
func (g Guard) Apply(p policy.Policy) Applied {
	a := Applied{Policy: clonePolicy(p)}
	out := &a.Policy
	denied := foldPaths(append(append([]string(nil), g.DenyWrite...), g.DenyRead...))
	if out.Unrestricted && !g.IsEmpty() {
		out.Unrestricted = false
		a.remove("unrestricted", "", "the guard restricts even danger-full-access")
	}
	out.WriteRoots = a.dropInside(out.WriteRoots, denied, "write_root")
	out.Devices = a.dropInside(out.Devices, denied, "device")
	out.ReadRoots = a.dropInside(out.ReadRoots, g.DenyRead, "read_root")
	out.CarveOuts = keepOverlapping(out.CarveOuts, out.WriteRoots)
	for _, d := range denied {
		if fspath.WritableUnder(d, out.WriteRoots, out.CarveOuts) {
			out.CarveOuts = append(out.CarveOuts, d)
			a.remove("carve_out", d, "denied by the guard: read-only inside a write root")
		}
	}
	for _, d := range g.DenyRead {
		if overlapsAny(d, out.ReadRoots) {
			a.MaskRead = append(a.MaskRead, d)
			a.remove("read", d, "deny_read in the guard: masked")
		}
	}
	if len(g.DenyDomains) > 0 && !g.DenyNetwork {
		a.denyDomains(g.DenyDomains)
	}
	if g.DenyNetwork && (out.Network != policy.NetworkIsolated || out.Domains != nil) {
		// Network by domain is network too: the proxy goes with it.
		out.Network, out.Domains = policy.NetworkIsolated, nil
		a.remove("network", "", "deny_network in the guard")
	}
	return a
}

// denyDomains adds the guard's deny_domains to the policy's network
// (policy.DenyDomains): to a network by domain's denied list, or a full
// network put behind the proxy. A policy without network loses nothing.
func (a *Applied) denyDomains(deny []string) {
	reason := "deny_domains in the guard: " + strings.Join(deny, ", ")
	switch {
	case a.Policy.Domains != nil:
	case a.Policy.Network == policy.NetworkFull:
		reason += " (the full network goes through sbx's proxy)"
	default:
		return
	}
	pats, err := profiles.ParseDomainPatterns(deny, "deny_domains")
	if err != nil {
		// ParseGuard refused such a guard; one built around it loses
		// the network rather than a deny entry (fail closed).
		a.Policy.Network, a.Policy.Domains = policy.NetworkIsolated, nil
		a.remove("network", "", "deny_domains in the guard: "+err.Error())
		return
	}
	a.Policy = a.Policy.DenyDomains(pats)
	a.remove("network", "", reason)
}

func (a *Applied) remove(what, path, reason string) {
	a.Removed = append(a.Removed, Removal{What: what, Path: path, Reason: reason})
}

// dropInside returns paths without those inside any of denied, recording each.
func (a *Applied) dropInside(paths, denied []string, what string) []string {
	var out []string
	for _, p := range paths {
		if d := coveringPath(p, denied); d != "" {
			a.remove(what, p, fmt.Sprintf("inside %s, denied by the guard", d))
			continue
		}
		out = append(out, p)
	}
	return out
}

func coveringPath(p string, bases []string) string {
	for _, b := range bases {
		if fspath.Within(p, b) {
			return b
		}
	}
	return ""
}

// keepOverlapping keeps the carve-outs that still overlap a write root (lie
// inside one or contain one). The others protect nothing once their root is
// gone, and Policy promises carve-outs lie inside write roots; dropping only
// those can never make a path writable.
func keepOverlapping(carveOuts, roots []string) []string {
	var out []string
	for _, c := range carveOuts {
		if overlapsAny(c, roots) {
			out = append(out, c)
		}
	}
	return out
}

func overlapsAny(p string, roots []string) bool {
	for _, r := range roots {
		if fspath.Within(p, r) || fspath.Within(r, p) {
			return true
		}
	}
	return false
}

// foldPaths sorts, de-duplicates and drops paths inside another of the list.
func foldPaths(paths []string) []string {
	s := append([]string(nil), paths...)
	sort.Strings(s)
	var out []string
	for _, p := range s {
		if !fspath.CoveredBy(p, out) {
			out = append(out, p)
		}
	}
	return out
}

// clonePolicy copies the slices so that Apply never writes into the caller's
// arrays (policy.DefaultDevices is shared by every policy).
func clonePolicy(p policy.Policy) policy.Policy {
	c := p
	c.ReadRoots = slices.Clone(p.ReadRoots)
	c.WriteRoots = slices.Clone(p.WriteRoots)
	c.CarveOuts = slices.Clone(p.CarveOuts)
	c.Devices = slices.Clone(p.Devices)
	c.Skipped = slices.Clone(p.Skipped)
	if p.Domains != nil {
		d := *p.Domains
		d.Allowed, d.Denied, d.Resolve = slices.Clone(d.Allowed), slices.Clone(d.Denied), slices.Clone(d.Resolve)
		c.Domains = &d
	}
	return c
}
