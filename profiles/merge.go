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
// client may grant less than asked, never more.
//
//   - Network survives only if both requested and granted.
//   - A granted write survives where it lies within a requested write.
//   - A granted read survives where it lies within a requested read or write
//     (write implies read). A granted write within a requested read, but no
//     requested write, survives as a read: that is what both sides allow.
//   - A granted path wider than a requested one (granted /a, requested /a/b)
//     is clamped to the requested path, which is what both sides allow.
//   - Anything else granted is dropped silently: extra paths are not errors.
//
// Both inputs must be normalised (absolute, clean paths, as Normalize or Build
// make them); Intersect compares spellings and does not touch the file system,
// so a relative path in either input never matches anything absolute.
func Intersect(requested, granted Profile) Profile {
	reqWrite := requested.WritePaths()
	reqRead := append(append([]string(nil), requested.ReadPaths()...), reqWrite...)
	grantWrite := granted.WritePaths()
	grantRead := append(append([]string(nil), granted.ReadPaths()...), grantWrite...)
	return Build(
		requested.NetworkEnabled() && granted.NetworkEnabled(),
		intersectTrees(grantRead, reqRead),
		intersectTrees(grantWrite, reqWrite),
	)
}

// intersectTrees returns the paths whose trees lie in both a tree of a and a
// tree of b: for each overlapping pair, the deeper of the two.
func intersectTrees(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			switch {
			case Within(x, y):
				out = append(out, x)
			case Within(y, x):
				out = append(out, y)
			}
		}
	}
	return out
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
