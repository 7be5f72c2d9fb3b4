package escalate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

func TestSmallestRetry(t *testing.T) {
	base := t.TempDir()
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	for _, d := range []string{ws, out, filepath.Join(out, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(out, "file"), nil, 0o644)
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{ws},
		CarveOuts: []string{ws + "/.git"}, Masked: []string{out + "/secret"}}
	guard := Guard{DenyWrite: []string{out + "/locked"}, DenyRead: []string{out + "/secret"}}
	fs := func(op, path string) report.Denial { return report.Denial{Operation: op, Path: path, Reason: "r"} }
	conn := report.Denial{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.2", Port: 80}}
	write := func(paths ...string) string {
		p := toJSON(profiles.New(nil, nil, paths))
		return `{"sandbox_permissions":"with_additional_permissions","additional_permissions":` + p + `,"justification":"","grant":` + p + `}`
	}
	escalated := `"sandbox_permissions":"require_escalated","escalate_to":"danger-full-access","justification":""`
	tests := []struct {
		name    string
		pol     policy.Policy
		guard   Guard
		add     profiles.Profile
		denials []report.Denial
		want    string
	}{
		{"write to an existing file grants the file", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("write", out+"/file")}, write(out + "/file")},
		{"create grants the directory", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("create", out+"/new")}, write(out)},
		{"mkdir deep grants the nearest existing directory", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("create", out+"/sub/gone/x")}, write(out + "/sub")},
		{"remove grants the directory", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("remove", out+"/sub/f")}, write(out + "/sub")},
		{"rename grants the destination directory", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("rename", out+"/moved")}, write(out)},
		{"chmod grants the object", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("chmod", out+"/file")}, write(out + "/file")},
		{"two creates in one directory ask once", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("create", out+"/a"), fs("create", out+"/b")}, write(out)},
		{"a file and its directory fold", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("write", out+"/file"), fs("create", out+"/b")}, write(out)},
		{"the call's own additional permissions stay, and the grant adds only what was denied", pol, Guard{}, profiles.New(nil, nil, []string{out + "/sub"}), []report.Denial{fs("write", out+"/file")},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":` + toJSON(profiles.New(nil, nil, []string{out + "/file", out + "/sub"})) + `,"justification":"","grant":` + toJSON(profiles.New(nil, nil, []string{out + "/file"})) + `}`},
		{"network", pol, Guard{}, profiles.Profile{}, []report.Denial{conn},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":{"network":{"enabled":true}},"justification":"","grant":{"network":{"enabled":true}}}`},
		{"network and a path", pol, Guard{}, profiles.Profile{}, []report.Denial{conn, fs("create", out+"/x")},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":{"network":{"enabled":true},"file_system":{"write":["` + out + `"]}},"justification":"","grant":{"network":{"enabled":true},"file_system":{"write":["` + out + `"]}}}`},
		{".git needs escalation", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("create", ws+"/.git")},
			`{` + escalated + `,"reason":"` + ws + `/.git is a read-only carve-out: additional permissions cannot widen past a carve-out"}`},
		{"escalation covers the rest", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("write", ws+"/.git/config"), fs("create", out+"/x"), conn},
			`{` + escalated + `,"reason":"` + ws + `/.git/config is inside the read-only carve-out ` + ws + `/.git: additional permissions cannot widen past a carve-out"}`},
		{"a refusal inside a write root (device node) needs escalation", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("create", ws+"/sda")},
			`{` + escalated + `,"reason":"create ` + ws + `/sda was refused although ` + ws + ` is writable (r)"}`},
		{"guard deny_write", pol, guard, profiles.Profile{}, []report.Denial{fs("create", out+"/locked/x")},
			`{"unresolved":[{"operation":"create","path":"` + out + `/locked/x","reason":"forbidden by guard: deny_write ` + out + `/locked"}]}`},
		{"guard deny_read", pol, guard, profiles.Profile{}, []report.Denial{fs("write", out+"/secret/k")},
			`{"unresolved":[{"operation":"write","path":"` + out + `/secret/k","reason":"forbidden by guard: deny_read ` + out + `/secret"}]}`},
		// Issue 27 §2: no retry for a set-id bit, inside the roots or out,
		// and none beside a denial that has one.
		{"a set-id bit has no retry", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("setid", ws+"/suid"), fs("setid", out+"/file")},
			`{"unresolved":[{"operation":"setid","path":"` + ws + `/suid","reason":"` + setidUnresolved + `"},{"operation":"setid","path":"` + out + `/file","reason":"` + setidUnresolved + `"}]}`},
		{"a set-id bit beside a write", pol, Guard{}, profiles.Profile{}, []report.Denial{fs("setid", ws+"/suid"), fs("write", out+"/file")},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":` + toJSON(profiles.New(nil, nil, []string{out + "/file"})) + `,"justification":"","unresolved":[{"operation":"setid","path":"` + ws + `/suid","reason":"` + setidUnresolved + `"}],"grant":` + toJSON(profiles.New(nil, nil, []string{out + "/file"})) + `}`},
		{"a hard link of a masked file, by the backend's reason", pol, guard, profiles.Profile{},
			[]report.Denial{{Operation: "read", Path: ws + "/innocent", Reason: "forbidden by guard: a hard link of " + out + "/secret, which is hidden"}},
			`{"unresolved":[{"operation":"read","path":"` + ws + `/innocent","reason":"forbidden by guard: a hard link of ` + out + `/secret, which is hidden"}]}`},
		{"guard next to a retry", pol, guard, profiles.Profile{}, []report.Denial{fs("create", out+"/locked/x"), fs("create", out+"/y")},
			`{"sandbox_permissions":"with_additional_permissions","additional_permissions":{"file_system":{"write":["` + out + `"]}},"justification":"","unresolved":[{"operation":"create","path":"` + out + `/locked/x","reason":"forbidden by guard: deny_write ` + out + `/locked"}],"grant":{"file_system":{"write":["` + out + `"]}}}`},
		{"guard deny_network", pol, Guard{DenyNetwork: true}, profiles.Profile{}, []report.Denial{conn},
			`{"unresolved":[{"operation":"connect","address":{"family":"inet","address":"192.0.2.2","port":80},"reason":"forbidden by guard: deny_network"}]}`},
		{"carve-out under danger-full-access", policy.Policy{Mode: profiles.DangerFullAccess, WriteRoots: []string{"/"}, CarveOuts: []string{ws}}, Guard{DenyWrite: []string{ws}}, profiles.Profile{},
			[]report.Denial{fs("write", ws+"/x")},
			`{"unresolved":[{"operation":"write","path":"` + ws + `/x","reason":"forbidden by guard: deny_write ` + ws + `"}]}`},
		{"a new name matching a deny pattern gets no retry", globPol(pol, ws), Guard{}, profiles.Profile{}, []report.Denial{fs("create", ws+"/other/.env")},
			`{"unresolved":[{"operation":"create","path":"` + ws + `/other/.env","reason":"forbidden: ` + ws + `/other/.env matches the deny_write pattern **/.env"}]}`},
		{"an existing match (a carve-out) gets no escalation", globPol(pol, ws), Guard{}, profiles.Profile{}, []report.Denial{fs("write", ws+"/sub/.env")},
			`{"unresolved":[{"operation":"write","path":"` + ws + `/sub/.env","reason":"forbidden: ` + ws + `/sub/.env matches the deny_write pattern **/.env"}]}`},
		{"a connect of a socket the command bound (an sbx server would not see the call's mark) gets no retry", pol, Guard{}, profiles.Profile{},
			[]report.Denial{{Operation: "connect", Path: ws + "/s.sock", Address: &report.Address{Family: "unix", Address: ws + "/s.sock"}, Reason: report.ReasonCallSocketBound}},
			`{"unresolved":[{"operation":"connect","path":"` + ws + `/s.sock","address":{"family":"unix","address":"` + ws + `/s.sock"},"reason":"` + report.ReasonCallSocketBound + `"}]}`},
		{"read-only mode: the workspace file", policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}}, Guard{}, profiles.Profile{},
			[]report.Denial{fs("create", ws+"/out.txt")}, write(ws)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := SmallestRetry(RetryInput{Policy: tt.pol, Guard: tt.guard, Additional: tt.add, Denials: tt.denials})
			if !ok {
				t.Fatal("no retry")
			}
			if got := toJSON(r); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, ok := SmallestRetry(RetryInput{Policy: pol}); ok {
		t.Error("a retry without denials")
	}
}

// TestSmallestRetryGrant: the grant covers what the same call needs from
// grants: the denials, plus its own profile when that was a request
// (with_additional_permissions); nothing for a require_escalated call, which
// grants do not apply to.
func TestSmallestRetryGrant(t *testing.T) {
	out := t.TempDir()
	sub := filepath.Join(out, "sub")
	os.Mkdir(sub, 0o755)
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"/nonexistent-ws"}}
	own := profiles.New(nil, nil, []string{sub})
	denials := []report.Denial{{Operation: "create", Path: out + "/x"}}
	for _, tt := range []struct {
		sp   profiles.SandboxPermissions
		want string
	}{
		{profiles.UseDefault, toJSON(profiles.New(nil, nil, []string{out}))},
		{profiles.WithAdditionalPermissions, toJSON(profiles.New(nil, nil, []string{out, sub}))},
		{profiles.RequireEscalated, "null"},
	} {
		r, _ := SmallestRetry(RetryInput{Policy: pol, Additional: own, SandboxPermissions: tt.sp, Denials: denials})
		if got := toJSON(r.Grant); got != tt.want {
			t.Errorf("%v: grant %s, want %s", tt.sp, got, tt.want)
		}
	}
}

// TestSmallestRetryValidates: the hint is a call Validate accepts once a
// justification is filled in, against the standing policy it came from.
func TestSmallestRetryValidates(t *testing.T) {
	out := t.TempDir()
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"/nonexistent-ws"}, CarveOuts: []string{"/nonexistent-ws/.git"}}
	for _, ds := range [][]report.Denial{
		{{Operation: "create", Path: out + "/x"}},
		{{Operation: "create", Path: "/nonexistent-ws/.git"}},
		{{Operation: "connect", Address: &report.Address{Family: "inet"}}},
	} {
		r, _ := SmallestRetry(RetryInput{Policy: pol, Denials: ds})
		c := Call{Standing: StandingFrom(pol), SandboxPermissions: *r.SandboxPermissions, Justification: "because"}
		if r.AdditionalPermissions != nil {
			c.Additional = *r.AdditionalPermissions
		}
		if r.EscalateTo != nil {
			c.Target = *r.EscalateTo
		}
		if err := Validate(c); err != nil {
			t.Errorf("%+v: the retry does not validate: %v", ds, err)
		}
	}
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// globPol is pol with the deny_write pattern **/.env anchored at ws, and
// its existing match ws/sub/.env a carve-out.
func globPol(pol policy.Policy, ws string) policy.Policy {
	pol.CarveOuts = append(append([]string(nil), pol.CarveOuts...), ws+"/sub/.env")
	pol.DenyGlobs = []policy.DenyGlob{{Pattern: ws + "/**/.env", Given: "**/.env", Access: policy.DenyWrite}}
	return pol
}
