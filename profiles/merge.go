package profiles

// Merge returns the union of ps, normalised with Build: network if any asks
// for it, every read and write path, with covered and duplicate paths folded.
// The inputs must be normalised (absolute, clean paths); Merge does not touch
// the file system.
func Merge(ps ...Profile) Profile {
	network := false
	var read, write []string
	for _, p := range ps {
		network = network || p.NetworkEnabled()
		read = append(read, p.ReadPaths()...)
		write = append(write, p.WritePaths()...)
	}
	return Build(network, read, write)
}

// Intersect returns what granted grants within what requested asked for: a
// client may grant less than asked, never more, and never outside the
// request. Each granted entry survives whole or not at all:
//
//   - Network survives only if both requested and granted.
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
		if CoveredBy(w, reqWrite) {
			write = append(write, w)
		}
	}
	for _, rd := range granted.ReadPaths() {
		if CoveredBy(rd, reqRead) {
			read = append(read, rd)
		}
	}
	return Build(requested.NetworkEnabled() && granted.NetworkEnabled(), read, write)
}

// Covers reports whether everything p asks for is already in q: network, and
// each write path within a write of q, each read path within a read or write
// of q. Both must be normalised.
func (q Profile) Covers(p Profile) bool {
	if p.NetworkEnabled() && !q.NetworkEnabled() {
		return false
	}
	qWrite := q.WritePaths()
	qRead := append(append([]string(nil), q.ReadPaths()...), qWrite...)
	for _, w := range p.WritePaths() {
		if !CoveredBy(w, qWrite) {
			return false
		}
	}
	for _, r := range p.ReadPaths() {
		if !CoveredBy(r, qRead) {
			return false
		}
	}
	return true
}
