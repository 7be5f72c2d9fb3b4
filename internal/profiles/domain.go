package profiles

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// DomainPattern is one entry of network.allowed_domains or
// network.denied_domains, parsed and canonical (netrule.Pattern, where the
// syntax is described).
type DomainPattern = netrule.Pattern

// DefaultPorts are the ports a pattern without ":PORT" matches.
var DefaultPorts = netrule.DefaultPorts

// ParseDomainPattern parses and canonicalises one pattern
// (netrule.ParsePattern). The error says what is wrong without the field
// name; callers wrap it in a FieldError.
func ParseDomainPattern(s string) (DomainPattern, error) { return netrule.ParsePattern(s) }

// CanonicalHost validates a DNS host name and returns it canonical
// (netrule.CanonicalHost).
func CanonicalHost(h string) (string, error) { return netrule.CanonicalHost(h) }

// ParseDomainPatterns parses a list (netrule.ParsePatterns); errors name
// field[i].
func ParseDomainPatterns(list []string, field string) ([]DomainPattern, error) {
	ps, err := netrule.ParsePatterns(list)
	var ie *netrule.IndexError
	if errors.As(err, &ie) {
		return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, ie.Index), Err: ie.Err}
	}
	return ps, err
}

// foldDomains canonicalises, sorts, de-duplicates and drops patterns
// within another of the list. Invalid entries must have been refused before.
func foldDomains(list []string) []string {
	var ps []DomainPattern
	for _, s := range list {
		if p, err := ParseDomainPattern(s); err == nil {
			ps = append(ps, p)
		}
	}
	var out []string
	for i, p := range ps {
		covered := false
		for j, q := range ps {
			// Of two equal patterns keep the first.
			if i != j && p.Within(q) && !(q.Within(p) && j > i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p.String())
		}
	}
	sort.Strings(out)
	return out
}

// DomainsWithin reports whether p lies within one of qs.
func DomainsWithin(p DomainPattern, qs []string) bool {
	for _, s := range qs {
		if q, err := ParseDomainPattern(s); err == nil && p.Within(q) {
			return true
		}
	}
	return false
}
