// Package netrule holds the typed network rules of a call: domain patterns
// (allowed_domains, denied_domains, --allow-domain, --deny-domain, the
// guard's deny_domains) and pinned names (--resolve, "resolve").
//
// A rule is parsed once, where a request enters sbx (the CLI's flags, a
// JSON request's decoding, a profile's validation), which names the field
// at fault; from there the policy, the proxy and the launcher carry the
// typed values and never parse text again.
//
//	p, err := netrule.ParsePattern("*.pythonhosted.org")   // subdomains, ports 80 and 443
//	r, err := netrule.ParseResolve("pypi.test:443:127.0.0.1")
//	p.Matches("files.pythonhosted.org", 443)               // true
//
// Guarantees: a parsed value is canonical (String reads back to an equal
// value) and the package imports no other sbx package, so every stage may
// use it (TestLeaf).
package netrule
