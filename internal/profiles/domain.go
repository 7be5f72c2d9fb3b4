package profiles

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// ParseDomainPatterns parses a list (netrule.ParsePatterns); errors name
// field[i].
func ParseDomainPatterns(list []string, field string) ([]netrule.Pattern, error) {
	ps, err := netrule.ParsePatterns(list)
	var ie *netrule.IndexError
	if errors.As(err, &ie) {
		return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, ie.Index), Err: ie.Err}
	}
	return ps, err
}

// Patterns reads back a list of patterns that the edge validated and
// spelt canonically (validateNetwork, ParseGuard, the CLI's flags): the
// permission model compares, merges and folds them typed, and this is
// where its stored text becomes typed values, once per list.
//
// IMPORTANT: the profile's wire type (Network) keeps its patterns as text,
// so a Profile carries no typed form of them; an entry that does not parse
// (a Profile built around validation) is dropped here, as foldDomains
// always did, and policy.Build, which alone turns patterns into rules,
// refuses such a profile naming the field (ParseDomainPatterns) rather
// than dropping a denied entry.
func Patterns(list []string) []netrule.Pattern {
	var ps []netrule.Pattern
	for _, s := range list {
		if p, err := netrule.ParsePattern(s); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// AllowedPatterns returns network.allowed_domains typed (Patterns).
func (p Profile) AllowedPatterns() []netrule.Pattern { return Patterns(p.AllowedDomains()) }

// DeniedPatterns returns network.denied_domains typed (Patterns).
func (p Profile) DeniedPatterns() []netrule.Pattern { return Patterns(p.DeniedDomains()) }

// foldDomains sorts, de-duplicates and drops patterns within another of
// the list, and spells what is left canonically.
func foldDomains(ps []netrule.Pattern) []string {
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
func DomainsWithin(p netrule.Pattern, qs []netrule.Pattern) bool {
	for _, q := range qs {
		if p.Within(q) {
			return true
		}
	}
	return false
}
