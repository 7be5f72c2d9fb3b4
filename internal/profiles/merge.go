package profiles

import "github.com/sbx-sandbox/sbx/internal/fspath"

// Merge returns the union of ps, normalised with Build: every read and write
// path, with covered and duplicate paths folded, and the network:
//
//   - full network if any asks for it (it is wider than any domain list);
//   - otherwise the union of allowed_domains;
//   - always the union of denied_domains: deny beats allow when a host is
//     matched (a deny is kept beside full network too, for the layer that
//     enforces it to honour or to report);
//   - allow_private_addresses if any asks for it;
//   - the union of deny_read and deny_write patterns.
//
// The inputs must be normalised (absolute, clean paths, canonical
// patterns); Merge does not touch the file system.
func Merge(ps ...Profile) Profile {
	full := false
	var read, write, allowed, denied []string
	private := false
	for _, p := range ps {
		full = full || p.NetworkMode() == NetworkAll
		if p.NetworkMode() == NetworkDomains {
			allowed = append(allowed, p.AllowedDomains()...)
		}
		denied = append(denied, p.DeniedDomains()...)
		private = private || p.AllowPrivateAddresses()
		read = append(read, p.ReadPaths()...)
		write = append(write, p.WritePaths()...)
	}
	if full {
		allowed = nil
	}
	n := &Network{Enabled: full || len(allowed) > 0, AllowedDomains: allowed, DeniedDomains: denied, AllowPrivateAddresses: private}
	return withDeniesOf(New(n, read, write), ps...)
}

// intersectNetwork is the network part of Intersect: each granted allowed
// entry survives when it lies within a requested one (a requested full
// network contains every entry); a granted full network answers only a
// requested full network (a wider answer is not an answer). Denials of
// both sides are kept: a deny only narrows.
func intersectNetwork(requested, granted Profile) *Network {
	out := &Network{DeniedDomains: append(append([]string(nil), requested.DeniedDomains()...), granted.DeniedDomains()...)}
	switch rq, gr := requested.NetworkMode(), granted.NetworkMode(); {
	case rq == NetworkAll && gr == NetworkAll:
		out.Enabled = true
	case rq != NetworkNone && gr == NetworkDomains:
		reqAllowed := requested.AllowedPatterns()
		for _, g := range granted.AllowedPatterns() {
			if rq == NetworkAll || DomainsWithin(g, reqAllowed) {
				out.AllowedDomains = append(out.AllowedDomains, g.String())
			}
		}
		// Nothing left is no network, never full network.
		out.Enabled = len(out.AllowedDomains) > 0
	}
	out.AllowPrivateAddresses = out.Enabled && requested.AllowPrivateAddresses() && granted.AllowPrivateAddresses()
	return out
}

// coversNetwork is the network part of Covers.
func coversNetwork(q, p Profile) bool {
	switch p.NetworkMode() {
	case NetworkAll:
		return q.NetworkMode() == NetworkAll
	case NetworkDomains:
		if q.NetworkMode() == NetworkNone {
			return false
		}
		allowed := p.AllowedPatterns()
		if len(allowed) != len(p.AllowedDomains()) {
			// An entry that does not parse is covered by nothing.
			return false
		}
		qAllowed, qDenied := q.AllowedPatterns(), q.DeniedPatterns()
		for _, d := range allowed {
			if DomainsWithin(d, qDenied) {
				return false
			}
			if q.NetworkMode() == NetworkDomains && !DomainsWithin(d, qAllowed) {
				return false
			}
		}
		if p.AllowPrivateAddresses() && q.NetworkMode() == NetworkDomains && !q.AllowPrivateAddresses() {
			return false
		}
	}
	return true
}

// Intersect returns what granted grants within what requested asked for: a
// client may grant less than asked, never more, and never outside the
// request. Each granted entry survives whole or not at all:
//
//   - Full network survives only if both requested and granted; a granted
//     allowed_domains entry survives when it lies within a requested one
//     (a granted "*.x.org" answers no request for "a.x.org"), and when none
//     survives the result has no network, never full network; denied
//     domains of both sides are kept; allow_private_addresses survives
//     only if both ask for it.
//   - A granted write survives when it lies within a requested write.
//   - A granted read survives when it lies within a requested read or write
//     (write implies read).
//   - A granted write within a requested read only is dropped, not turned
//     into a read: the client answered something that was not asked.
//   - A granted path wider than the requested one (granted /a, requested
//     /a/b) is dropped, not clamped: a client cannot grant outside the
//     request, and a wider answer is not an answer to it.
//   - Anything else granted is dropped silently: extra paths are not errors.
//
// Both inputs must be normalised (absolute, clean paths, as Normalize or Build
// make them); Intersect compares spellings and does not touch the file system,
// so a relative path in either input never matches anything absolute.
func Intersect(requested, granted Profile) Profile {
	reqWrite := requested.WritePaths()
	reqRead := append(append([]string(nil), requested.ReadPaths()...), reqWrite...)
	var read, write []string
	for _, w := range granted.WritePaths() {
		if fspath.CoveredBy(w, reqWrite) {
			write = append(write, w)
		}
	}
	for _, rd := range granted.ReadPaths() {
		if fspath.CoveredBy(rd, reqRead) {
			read = append(read, rd)
		}
	}
	// Deny patterns of both sides are kept: a deny only narrows.
	return withDeniesOf(New(intersectNetwork(requested, granted), read, write), requested, granted)
}

// Covers reports whether everything p asks for is already in q: network (full
// network, or each allowed domain within one of q's and denied by none of
// q's, and allow_private_addresses), and
// each write path within a write of q, each read path within a read or write
// of q. Both must be normalised.
func (q Profile) Covers(p Profile) bool {
	if !coversNetwork(q, p) {
		return false
	}
	qWrite := q.WritePaths()
	qRead := append(append([]string(nil), q.ReadPaths()...), qWrite...)
	for _, w := range p.WritePaths() {
		if !fspath.CoveredBy(w, qWrite) {
			return false
		}
	}
	for _, r := range p.ReadPaths() {
		if !fspath.CoveredBy(r, qRead) {
			return false
		}
	}
	return true
}
