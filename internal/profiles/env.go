package profiles

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
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
// command could exfiltrate or leak into logs. They match substrings, so each
// is a word that is never innocent inside a longer one (docs/env.md has the
// survey of real names behind them and SecretSegments).
var SecretPatterns = []string{"*TOKEN*", "*SECRET*", "*KEY*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*",
	"*PASSPHRASE*",        // GPG_PASSPHRASE, SSH_KEY_PASSPHRASE
	"*CONNECTION_STRING*", // AZURE_STORAGE_CONNECTION_STRING carries AccountKey=
}

// SecretSegments are words that mark a secret only as a whole segment of the
// name split on '_' (case-insensitive): as substrings they would strip
// innocent names (AUTH is in GIT_AUTHOR_NAME and XAUTHORITY, PAT in PATH,
// PASS in PASSENGER_APP_ENV).
var SecretSegments = []string{
	"AUTH",          // NPM_AUTH, NPM_CONFIG__AUTH, COMPOSER_AUTH, DOCKER_AUTH_CONFIG, SSH_AUTH_SOCK (the agent signs with the user's keys)
	"AUTHORIZATION", // HTTP_AUTHORIZATION
	"BEARER",        // BEARER, API_BEARER
	"PRIVATE",       // PRIVATE_KEY_PATH, SIGNING_PRIVATE
	"WEBHOOK",       // SLACK_WEBHOOK_URL, DISCORD_WEBHOOK: the URL is the credential
	"PAT",           // GH_PAT, GITHUB_PAT, AZURE_DEVOPS_PAT (personal access tokens)
	"PASS",          // DB_PASS, SMTP_PASS, REDIS_PASS
	"JWT",           // CI_JOB_JWT
	"CREDS",         // AWS_CREDS, GIT_CREDS
}

// SecretNames are whole names (globs, case-insensitive) of credentials that
// neither list catches.
var SecretNames = []string{
	"PGPASS",       // a password, by analogy with PGPASSWORD
	"MYSQL_PWD",    // MySQL's password variable (PWD alone is the working directory)
	"SENTRY_DSN",   // the DSN's key authenticates event submissions
	"BW_SESSION",   // Bitwarden CLI session key: unlocks the vault
	"OP_SESSION_*", // 1Password CLI session tokens
}

// urlSuffixes are the last name segments of variables whose value is a URL;
// such a value is a secret when its userinfo has a password
// (scheme://user:pass@host), as DATABASE_URL or REDIS_URL often do.
var urlSuffixes = []string{"URL", "URI", "DSN"}

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
		return nil, rep, &strictjson.FieldError{Field: "env_policy.mode", Err: fmt.Errorf("unknown mode %q (want inherit, clean, allow-list)", mode)}
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
			keep = !secretVariable(kv) || matchAny(name, p.Allow)
		case EnvClean:
			keep = matchAny(name, cleanNames)
		case EnvAllowList:
			keep = matchAny(name, p.Allow)
		}
		if _, set := p.Set[name]; set {
			// Set replaces it: with both in the environment, getenv
			// would return the first, the inherited one.
			continue
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
			return nil, rep, &strictjson.FieldError{Field: "env", Err: fmt.Errorf("invalid variable name %q", k)}
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

// secretVariable says whether the NAME=VALUE entry kv looks like a
// credential: by its name, or, for a URL-valued name, by a password in the
// value. The value is only looked at, never kept or reported.
func secretVariable(kv string) bool {
	name, value, _ := strings.Cut(kv, "=")
	if SecretLooking(name) {
		return true
	}
	segments := strings.Split(strings.ToUpper(name), "_")
	return slices.Contains(urlSuffixes, segments[len(segments)-1]) && urlHasPassword(value)
}

// SecretLooking reports whether inherit mode strips name whatever its
// value: it matches one of SecretPatterns or SecretNames, or one of its
// segments (split on "_") is in SecretSegments.
func SecretLooking(name string) bool {
	if v, ok := secretMemo.Load(name); ok {
		return v.(bool)
	}
	secret := secretLooking(name)
	if secretMemoLen.Load() < maxSecretMemo {
		if _, loaded := secretMemo.LoadOrStore(name, secret); !loaded {
			secretMemoLen.Add(1)
		}
	}
	return secret
}

// secretMemo remembers SecretLooking's answer by name (a name, never a
// value): sbx serve checks the same environment on every call, and the
// pattern match was ~1.5% of its CPU (#31). The patterns are fixed, so an
// answer never goes stale. At most maxSecretMemo names are kept, so that
// requests naming ever new variables cannot grow it without bound; past
// that, names are matched each time.
var (
	secretMemo    sync.Map // string → bool
	secretMemoLen atomic.Int64
)

const maxSecretMemo = 4096

func secretLooking(name string) bool {
	if matchAny(name, SecretPatterns) || matchAny(name, SecretNames) {
		return true
	}
	for _, seg := range strings.Split(strings.ToUpper(name), "_") {
		if slices.Contains(SecretSegments, seg) {
			return true
		}
	}
	return false
}

// urlHasPassword says whether some URL in v (each "://" is looked at) has
// userinfo with a non-empty password: the authority, up to the first '/',
// '?' or '#', holds an '@', and what comes before the last '@' a ':' with
// something after it. A user without a password (git@host) is not a
// secret by itself.
func urlHasPassword(v string) bool {
	for {
		_, rest, ok := strings.Cut(v, "://")
		if !ok {
			return false
		}
		authority := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authority = rest[:i]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			if _, pass, ok := strings.Cut(authority[:at], ":"); ok && pass != "" {
				return true
			}
		}
		v = rest
	}
}

func matchAny(name string, patterns []string) bool {
	upper := strings.ToUpper(name)
	for _, pat := range patterns {
		if fspath.MatchName(strings.ToUpper(pat), upper) {
			return true
		}
	}
	return false
}
