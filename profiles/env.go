package profiles

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// EnvMode says which of sbx's own environment a command inherits.
type EnvMode string

const (
	EnvInherit   EnvMode = "inherit"    // everything except secret-looking names
	EnvClean     EnvMode = "clean"      // only a minimal set (PATH, HOME, LANG, TERM, ...)
	EnvAllowList EnvMode = "allow-list" // only the names in Allow
)

// SecretPatterns are the glob patterns (case-insensitive) of variable names
// stripped by default: API tokens, keys and passwords are what a sandboxed
// command could exfiltrate or leak into logs.
var SecretPatterns = []string{"*TOKEN*", "*SECRET*", "*KEY*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*"}

// cleanNames are kept by EnvClean: what shells and common tools need to work.
var cleanNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR"}

// EnvPolicy is the environment a command gets.
type EnvPolicy struct {
	Mode EnvMode `json:"mode,omitempty"`
	// Allow lists names (globs) kept in allow-list mode, and names kept
	// despite looking like secrets in inherit mode.
	Allow []string `json:"allow,omitempty"`
	// Set are explicit entries, applied last; they are never stripped.
	Set map[string]string `json:"set,omitempty"`
}

// EnvReport says what the policy did, by name only: values never appear.
type EnvReport struct {
	Mode     EnvMode  `json:"mode"`
	Stripped []string `json:"stripped"`
	Set      []string `json:"set"`
}

// Apply returns the command's environment from base (KEY=VALUE entries).
func (p EnvPolicy) Apply(base []string) ([]string, EnvReport, error) {
	mode := p.Mode
	if mode == "" {
		mode = EnvInherit
	}
	rep := EnvReport{Mode: mode, Stripped: []string{}, Set: []string{}}
	if mode != EnvInherit && mode != EnvClean && mode != EnvAllowList {
		return nil, rep, &FieldError{Field: "env_policy.mode", Err: fmt.Errorf("unknown mode %q (want inherit, clean, allow-list)", mode)}
	}
	var out []string
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		var keep bool
		switch mode {
		case EnvInherit:
			keep = !matchAny(name, SecretPatterns) || matchAny(name, p.Allow)
		case EnvClean:
			keep = matchAny(name, cleanNames)
		case EnvAllowList:
			keep = matchAny(name, p.Allow)
		}
		if keep {
			out = append(out, kv)
		} else {
			rep.Stripped = append(rep.Stripped, name)
		}
	}
	names := make([]string, 0, len(p.Set))
	for k := range p.Set {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, rep, &FieldError{Field: "env", Err: fmt.Errorf("invalid variable name %q", k)}
		}
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+p.Set[k])
	}
	rep.Set = names
	sort.Strings(rep.Stripped)
	return out, rep, nil
}

// SecretLooking reports whether inherit mode strips name (it matches one
// of SecretPatterns).
func SecretLooking(name string) bool { return matchAny(name, SecretPatterns) }

func matchAny(name string, patterns []string) bool {
	upper := strings.ToUpper(name)
	for _, pat := range patterns {
		if matchName(strings.ToUpper(pat), upper) {
			return true
		}
	}
	return false
}

// matchName is path.Match for a variable name, with a fast path for
// patterns whose only wildcard is '*' (all the built-in ones): path.Match
// retries every split of a '*', which made the secret check the costliest
// step of a call's set-up (~130 µs for 35 variables).
func matchName(pat, name string) bool {
	if strings.ContainsAny(pat, `?[\`) || strings.Contains(name, "/") {
		ok, _ := path.Match(pat, name)
		return ok
	}
	first, rest, star := strings.Cut(pat, "*")
	if !star {
		return pat == name
	}
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for {
		mid, more, star := strings.Cut(rest, "*")
		if !star {
			// mid is the last literal: it must end the name.
			return strings.HasSuffix(name, mid)
		}
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name, rest = name[i+len(mid):], more
	}
}
