package call

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runLine is a command line with sbx run's spelling of the flags this
// test uses (cmd/sbx tests the spelling against its own flag set).
func runLine(args ...string) CommandLine {
	return CommandLine{Prefix: []string{"sbx", "run"}, Args: args,
		ValueFlags: map[string]bool{"mode": true, "cwd": true, "report": true, "allow-read": true, "allow-write": true,
			"sandbox-permissions": true, "escalate": true, "justification": true, "allow-domain": true, "deny-domain": true, "resolve": true}}
}

func TestCommandLineArgv(t *testing.T) {
	with, esc, dfa, empty := profiles.WithAdditionalPermissions, profiles.RequireEscalated, profiles.DangerFullAccess, ""
	writeOut, netOnly := write("/out"), profiles.New(profiles.FullNetwork(), nil, nil)
	withOut := escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &writeOut, Justification: &empty}
	toDFA := escalate.Retry{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty}
	aOut := write("/a", "/out")
	dom := func(private bool, hosts ...string) profiles.Profile {
		return profiles.New(&profiles.Network{Enabled: true, AllowedDomains: hosts, AllowPrivateAddresses: private}, nil, nil)
	}
	domA, domB, domPriv := dom(false, "a.test"), dom(false, "a.test", "b.test:8443"), dom(true, "a.test")
	domainArgs := []string{"--allow-domain", "a.test", "--deny-domain", "c.test", "--resolve", "a.test:443:127.0.0.1", "--", "true"}
	tests := []struct {
		name string
		args []string
		r    escalate.Retry
		orig profiles.Profile
		want []string
	}{
		{"plain", []string{"--mode", "workspace-write", "--", "sh", "-c", "x"}, withOut, profiles.Profile{},
			[]string{"sbx", "run", "--mode", "workspace-write", "--sandbox-permissions", "with_additional_permissions", "--allow-write", "/out", "--justification", "", "--", "sh", "-c", "x"}},
		{"flag=value forms and bool flags kept, the command at the first non-flag", []string{"-mode=workspace-write", "--exclude-tmp", "--report", "r.json", "true"}, withOut, profiles.Profile{},
			[]string{"sbx", "run", "-mode=workspace-write", "--exclude-tmp", "--report", "r.json", "--sandbox-permissions", "with_additional_permissions", "--allow-write", "/out", "--justification", "", "--", "true"}},
		{"an earlier escalation is replaced, its paths kept", []string{"--sandbox-permissions", "with_additional_permissions", "--allow-write", "/a", "--justification", "old", "--", "true"},
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &aOut, Justification: &empty}, write("/a"),
			[]string{"sbx", "run", "--allow-write", "/a", "--sandbox-permissions", "with_additional_permissions", "--allow-write", "/out", "--justification", "", "--", "true"}},
		{"network only adds --network and keeps the rest", []string{"--allow-write", "/a", "--sandbox-permissions", "with_additional_permissions", "--justification", "j", "--", "true"},
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &netOnly, Justification: &empty}, write("/a"),
			[]string{"sbx", "run", "--allow-write", "/a", "--sandbox-permissions", "with_additional_permissions", "--justification", "j", "--network", "--", "true"}},
		{"network given already", []string{"--network", "--", "true"},
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &netOnly, Justification: &empty}, profiles.Profile{},
			[]string{"sbx", "run", "--network", "--", "true"}},
		{"escalation drops additional permissions", []string{"--mode", "workspace-write", "--allow-write", "/a", "--network", "--", "true"}, toDFA, write("/a"),
			[]string{"sbx", "run", "--mode", "workspace-write", "--network", "--escalate", "danger-full-access", "--justification", "", "--", "true"}},
		{"escalation replaces an earlier --escalate", []string{"--mode", "read-only", "--escalate", "workspace-write", "--justification", "j", "--", "true"}, toDFA, profiles.Profile{},
			[]string{"sbx", "run", "--mode", "read-only", "--escalate", "danger-full-access", "--justification", "", "--", "true"}},
		{"nothing to ask", []string{"--", "true"}, escalate.Retry{}, profiles.Profile{}, nil},
		{"a host adds --allow-domain, keeping the domain flags", domainArgs, escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &domB, Justification: &empty}, domA,
			[]string{"sbx", "run", "--allow-domain", "a.test", "--deny-domain", "c.test", "--resolve", "a.test:443:127.0.0.1", "--allow-domain", "b.test:8443", "--", "true"}},
		{"a private address adds --allow-private-addresses", domainArgs, escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &domPriv, Justification: &empty}, domA,
			[]string{"sbx", "run", "--allow-domain", "a.test", "--deny-domain", "c.test", "--resolve", "a.test:443:127.0.0.1", "--allow-private-addresses", "--", "true"}},
		// A regression test: the domain flags were kept beside --network
		// and --escalate danger-full-access, which sbx run refuses (125).
		{"the whole network drops the domain flags", append([]string{"--allow-private-addresses"}, domainArgs...), escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &netOnly, Justification: &empty}, domA,
			[]string{"sbx", "run", "--network", "--", "true"}},
		{"an escalation drops the domain flags", domainArgs, toDFA, domA,
			[]string{"sbx", "run", "--escalate", "danger-full-access", "--justification", "", "--", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runLine(tt.args...).Argv(tt.r, tt.orig); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRetryRequest(t *testing.T) {
	with, esc, dfa, empty := profiles.WithAdditionalPermissions, profiles.RequireEscalated, profiles.DangerFullAccess, ""
	add := write("/out")
	raw := []byte(`{"command":["true"],"cwd":"/w","timeout_ms":1500,"escalate_to":"workspace-write","preauthorized":true,"additional_permissions":{"file_system":{"write":["a"]}}}`)
	m := retryRequest(raw, escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &add, Justification: &empty})
	if got := mustJSON(t, m); got != `{"additional_permissions":{"file_system":{"write":["/out"]}},"command":["true"],"cwd":"/w","justification":"","sandbox_permissions":"with_additional_permissions","timeout_ms":1500}` {
		t.Errorf("with_additional_permissions: %s", got)
	}
	m = retryRequest(raw, escalate.Retry{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty})
	if got := mustJSON(t, m); got != `{"command":["true"],"cwd":"/w","escalate_to":"danger-full-access","justification":"","sandbox_permissions":"require_escalated","timeout_ms":1500}` {
		t.Errorf("require_escalated: %s", got)
	}
	if retryRequest(raw, escalate.Retry{}) != nil {
		t.Error("a request for a retry that asks nothing")
	}
}

// TestPreparedRetry: the retry is built from what Prepare decided (the
// policy, the guard it loaded, the call's own profile), in the forms asked.
func TestPreparedRetry(t *testing.T) {
	f := newFixture(t)
	create := func(path string) report.Denial {
		return report.Denial{Operation: "create", Path: path, Reason: "outside the writable roots"}
	}
	connect := report.Denial{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.2", Port: 80}}
	raw := []byte(`{"command":["x"],"cwd":"` + f.ws + `"}`)
	tests := []struct {
		name    string
		edit    func(r *Request)
		denials []report.Denial
		form    RetryForm
		// want is the hint's JSON.
		want string
	}{
		{"no denials", nil, nil, RetryForm{}, "null"},
		{"a create grants the directory, as a request and a grant", nil, []report.Denial{create(filepath.Join(f.out, "new"))}, RetryForm{Request: raw},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":{"file_system":{"write":["` + f.out + `"]}},"justification":"",` +
				`"grant":{"file_system":{"write":["` + f.out + `"]}},` +
				`"request":{"additional_permissions":{"file_system":{"write":["` + f.out + `"]}},"command":["x"],"cwd":"` + f.ws + `","justification":"","sandbox_permissions":"with_additional_permissions"}}`},
		{"the call's own paths are kept, as an argv", func(r *Request) {
			r.Additional, r.Preauthorized = write(f.granted), true
		}, []report.Denial{create(filepath.Join(f.out, "new"))}, RetryForm{CommandLine: ptr(runLine("--allow-write", f.granted, "--", "x"))},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":{"file_system":{"write":` + mustJSON(t, slices.Sorted(slices.Values([]string{f.granted, f.out}))) + `}},"justification":"",` +
				`"grant":{"file_system":{"write":["` + f.out + `"]}},` +
				`"argv":["sbx","run","--allow-write","` + f.granted + `","--sandbox-permissions","with_additional_permissions","--allow-write","` + f.out + `","--justification","","--","x"]}`},
		{"what the loaded guard forbids has no retry", func(r *Request) { r.Escalation.GuardPath = f.guard },
			[]report.Denial{create(filepath.Join(f.out, "new")), connect}, RetryForm{Request: raw},
			`{"unresolved":[{"operation":"create","path":"` + f.out + `/new","reason":"forbidden by guard: deny_write ` + f.out + `"},` +
				`{"operation":"connect","address":{"family":"inet","address":"192.0.2.2","port":80},"reason":"forbidden by guard: deny_network"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.request()
			if tt.edit != nil {
				tt.edit(&r)
			}
			p, err := Prepare(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, p.Retry(tt.denials, Failed, tt.form)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestRetryQuietOnSuccess: a call that succeeded with denials gets no retry
// unless it asked (retry_on_success); one that failed gets it either way
// (issue 29: git status exits 0 without the index lock it was refused).
func TestRetryQuietOnSuccess(t *testing.T) {
	f := newFixture(t)
	denials := []report.Denial{{Operation: "create", Path: filepath.Join(f.out, "index.lock"), Reason: "outside the writable roots"}}
	tests := []struct {
		name           string
		retryOnSuccess bool
		outcome        Outcome
		want           bool
	}{
		{"succeeded: none", false, Succeeded, false},
		{"succeeded, asked: the retry", true, Succeeded, true},
		{"failed: the retry", false, Failed, true},
		{"failed, asked: the retry", true, Failed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.request()
			r.RetryOnSuccess = tt.retryOnSuccess
			p, err := Prepare(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			h := p.Retry(denials, tt.outcome, RetryForm{})
			if got := h.Helps(); got != tt.want {
				t.Errorf("retry %s, want one: %v", mustJSON(t, h), tt.want)
			}
		})
	}
}

func TestExitOutcome(t *testing.T) {
	sig := 9
	tests := []struct {
		name string
		rep  report.Report
		want Outcome
	}{
		{"exit 0", report.Report{}, Succeeded},
		{"exit 1", report.Report{ExitCode: 1}, Failed},
		{"a signal", report.Report{ExitCode: 137, Signal: &sig}, Failed},
		{"killed, status 0", report.Report{KilledBy: "timeout", TimedOut: true}, Failed},
	}
	for _, tt := range tests {
		if got := ExitOutcome(tt.rep); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
