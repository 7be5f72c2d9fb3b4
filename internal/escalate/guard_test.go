package escalate

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestLoadGuardRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"named file missing", filepath.Join(dir, "missing.json"), "no such file"},
		{"unknown field", write("u.json", `{"deny_writes":["/etc"]}`), "deny_writes: unknown field"},
		{"relative path", write("r.json", `{"deny_write":["/etc","etc"]}`), `deny_write[1]: "etc" is not an absolute path`},
		{"relative read path", write("rr.json", `{"deny_read":["~/.ssh"]}`), `deny_read[0]: "~/.ssh" is not an absolute path`},
		{"wrong type", write("t.json", `{"deny_network":"yes"}`), "deny_network: expected a boolean, got JSON string"},
		{"garbage", write("g.json", `deny everything`), "malformed JSON"},
		// A guard only takes away: the last duplicate or a case variant
		// would silently drop the first list (DESIGN.md invariant 4).
		{"duplicate list, empty last", write("d.json", `{"deny_write":["/etc"],"deny_write":[]}`), "deny_write: duplicate key"},
		{"duplicate deny_network", write("dn.json", `{"deny_network":true,"deny_network":false}`), "deny_network: duplicate key"},
		{"case variant", write("c.json", `{"DENY_WRITE":["/etc"]}`), "DENY_WRITE: unknown field (did you mean deny_write?)"},
		{"array", write("a.json", `[{"deny_write":["/etc"]}]`), "expected a JSON object, got JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadGuard(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadGuardDefaultLocation(t *testing.T) {
	old := defaultGuardPath
	t.Cleanup(func() { defaultGuardPath = old })
	defaultGuardPath = filepath.Join(t.TempDir(), "guard.json")
	g, err := LoadGuard("")
	if err != nil || !g.IsEmpty() {
		t.Fatalf("missing default: %+v, %v; want an empty guard", g, err)
	}
	// Named explicitly, the same missing file is an error.
	if _, err := LoadGuard(defaultGuardPath); err == nil {
		t.Fatal("missing named guard accepted")
	}
	os.WriteFile(defaultGuardPath, []byte(`{"deny_write":["/sbx-test/b","/sbx-test/a","/sbx-test/a/x"],"deny_network":true}`), 0o644)
	g, err = LoadGuard("")
	if err != nil || !reflect.DeepEqual(g.DenyWrite, []string{"/sbx-test/a", "/sbx-test/b"}) || !g.DenyNetwork {
		t.Fatalf("default: %+v, %v", g, err)
	}
}

func TestGuardApply(t *testing.T) {
	ws := policy.Policy{
		Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"},
		WriteRoots: []string{"/tmp", repo}, CarveOuts: []string{repo + "/.git"},
		Devices: []string{"/dev/null", "/dev/tty"}, Network: policy.NetworkFull,
	}
	full := policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true, ReadRoots: []string{"/"}, WriteRoots: []string{"/"}, Network: policy.NetworkFull}
	tests := []struct {
		name  string
		guard Guard
		in    policy.Policy
		want  policy.Policy
		mask  []string
		what  []string
	}{
		{
			name: "empty guard changes nothing", in: ws, want: ws,
		},
		{
			name:  "write root inside a denied path goes, denied paths under a root become read-only",
			guard: Guard{DenyWrite: []string{"/tmp", repo + "/secrets"}, DenyRead: []string{repo + "/.env"}},
			in:    ws,
			want: policy.Policy{
				Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{repo},
				CarveOuts: []string{repo + "/.git", repo + "/.env", repo + "/secrets"},
				Devices:   []string{"/dev/null", "/dev/tty"}, Network: policy.NetworkFull,
			},
			mask: []string{repo + "/.env"},
			what: []string{"write_root", "carve_out", "carve_out", "read"},
		},
		{
			name:  "deny_read above a write root removes the root and its carve-outs",
			guard: Guard{DenyRead: []string{"/sbx-test"}},
			in:    ws,
			want: policy.Policy{
				Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"/tmp"},
				Devices: []string{"/dev/null", "/dev/tty"}, Network: policy.NetworkFull,
			},
			mask: []string{"/sbx-test"},
			what: []string{"write_root", "read"},
		},
		{
			name: "network and devices", guard: Guard{DenyNetwork: true, DenyWrite: []string{"/dev/tty"}}, in: ws,
			want: policy.Policy{
				Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"/tmp", repo},
				CarveOuts: []string{repo + "/.git"}, Devices: []string{"/dev/null"}, Network: policy.NetworkIsolated,
			},
			what: []string{"device", "network"},
		},
		{
			// A regression test: deny_network once left a domain policy's
			// proxy in place (the network was already "isolated").
			name: "deny_network takes network by domain too", guard: Guard{DenyNetwork: true},
			in:   policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}, Domains: &policy.Domains{Allowed: domainPats(t, "pypi.org")}},
			want: policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}},
			what: []string{"network"},
		},
		{
			name: "danger-full-access loses unrestricted", guard: Guard{DenyNetwork: true, DenyWrite: []string{"/etc"}}, in: full,
			want: policy.Policy{Mode: profiles.DangerFullAccess, ReadRoots: []string{"/"}, WriteRoots: []string{"/"}, CarveOuts: []string{"/etc"}},
			what: []string{"unrestricted", "carve_out", "network"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.guard.Apply(tt.in)
			if !reflect.DeepEqual(got.Policy, tt.want) {
				t.Errorf("policy\n got %+v\nwant %+v", got.Policy, tt.want)
			}
			if !slices.Equal(got.MaskRead, tt.mask) {
				t.Errorf("mask %v, want %v", got.MaskRead, tt.mask)
			}
			var what []string
			for _, r := range got.Removed {
				what = append(what, r.What)
			}
			if !slices.Equal(what, tt.what) {
				t.Errorf("removed %v, want %v", got.Removed, tt.what)
			}
		})
	}
	if !reflect.DeepEqual(ws.Devices, []string{"/dev/null", "/dev/tty"}) {
		t.Error("Apply wrote into its input")
	}
}

// TestGuardBeatsApprovedEscalation: an approver allows danger-full-access,
// and the guard still takes the network and the denied path away.
func TestGuardBeatsApprovedEscalation(t *testing.T) {
	cwd := t.TempDir()
	c := escalation()
	c.Cwd = cwd
	dec, err := Decide(context.Background(), c, profiles.ApprovalOnRequest, &recorder{outcome: AllowedOnce})
	if err != nil || dec.Mode != profiles.DangerFullAccess {
		t.Fatalf("%+v, %v", dec, err)
	}
	pol, err := policy.Build(policy.Request{Mode: dec.Mode, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	deny := filepath.Join(cwd, "secret")
	got := Guard{DenyWrite: []string{deny}, DenyRead: []string{"/sbx-test/keys"}, DenyNetwork: true}.Apply(pol)
	p := got.Policy
	if p.Unrestricted || p.Network != policy.NetworkIsolated || !fspath.CoveredBy(deny, p.CarveOuts) || !slices.Contains(got.MaskRead, "/sbx-test/keys") {
		t.Fatalf("guard lost to the escalation: %+v", got)
	}
}

// TestGuardApplyIsMonotoneAndIdempotent checks random policies and guards:
// nothing writable, networked or unrestricted comes out that did not go in,
// nothing denied stays writable, and a second Apply changes nothing.
func TestGuardApplyIsMonotoneAndIdempotent(t *testing.T) {
	alphabet := []string{"/", "/a", "/a/b", "/a/b/c", "/a/bc", "/d", "/d/e", "/tmp", "/dev/null", "/dev/tty"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(max int) []string {
		var out []string
		for range rng.IntN(max + 1) {
			out = append(out, alphabet[rng.IntN(len(alphabet))])
		}
		return out
	}
	for i := range 5000 {
		in := policy.Policy{
			Mode: profiles.Modes()[rng.IntN(3)], Unrestricted: rng.IntN(4) == 0,
			ReadRoots: pick(2), WriteRoots: pick(3), CarveOuts: pick(2), Devices: pick(2),
			Network: policy.Network(rng.IntN(2)),
		}
		g := Guard{DenyRead: foldPaths(pick(2)), DenyWrite: foldPaths(pick(2)), DenyNetwork: rng.IntN(2) == 0}
		a := g.Apply(in)
		out := a.Policy
		for _, w := range out.WriteRoots {
			if !slices.Contains(in.WriteRoots, w) {
				t.Fatalf("case %d: new write root %s\nin  %+v\nout %+v", i, w, in, out)
			}
		}
		for _, d := range out.Devices {
			if !slices.Contains(in.Devices, d) {
				t.Fatalf("case %d: new device %s", i, d)
			}
		}
		if out.Network == policy.NetworkFull && in.Network != policy.NetworkFull || g.DenyNetwork && out.Network == policy.NetworkFull {
			t.Fatalf("case %d: network %s from %s with %+v", i, out.Network, in.Network, g)
		}
		if out.Unrestricted && (!in.Unrestricted || !g.IsEmpty()) {
			t.Fatalf("case %d: unrestricted survived %+v", i, g)
		}
		for _, x := range alphabet {
			if writable(out, x) && !writable(in, x) {
				t.Fatalf("case %d: %s became writable\nin  %+v\nout %+v", i, x, in, out)
			}
			if writable(out, x) && (fspath.CoveredBy(x, g.DenyWrite) || fspath.CoveredBy(x, g.DenyRead)) {
				t.Fatalf("case %d: denied %s still writable\nguard %+v\nout %+v", i, x, g, out)
			}
		}
		again := g.Apply(out)
		if !reflect.DeepEqual(again.Policy, out) || !slices.Equal(again.MaskRead, a.MaskRead) {
			t.Fatalf("case %d: not idempotent\nonce  %+v\ntwice %+v", i, out, again.Policy)
		}
	}
}

func writable(p policy.Policy, x string) bool {
	return fspath.CoveredBy(x, p.WriteRoots) && !fspath.CoveredBy(x, p.CarveOuts)
}

func TestGuardErrorIsNotADenial(t *testing.T) {
	_, err := ParseGuard([]byte(`{"deny_write":["x"]}`))
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v", err)
	}
}

// TestParseGuardGlobs: entries with a wildcard are patterns, kept apart
// from the paths (canonical, relative ones allowed); a literal entry must
// still be absolute; a bad pattern names its field and index; a guard of
// patterns only is not empty.
func TestParseGuardGlobs(t *testing.T) {
	g, err := ParseGuard([]byte(`{"deny_read": ["/nonexistent-sbx/shadow", "**/.env", "**/**/.env"], "deny_write": ["/nonexistent-sbx/*/.ssh/"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.DenyRead, []string{"/nonexistent-sbx/shadow"}) || !slices.Equal(g.DenyReadGlobs, []string{"**/.env"}) ||
		len(g.DenyWrite) != 0 || !slices.Equal(g.DenyWriteGlobs, []string{"/nonexistent-sbx/*/.ssh"}) {
		t.Errorf("guard %+v", g)
	}
	if (Guard{DenyWriteGlobs: []string{"*.pem"}}).IsEmpty() {
		t.Error("a guard of patterns only is empty")
	}
	for _, tt := range []struct{ in, field string }{
		{`{"deny_read": ["/etc/shadow", "a/**b"]}`, "deny_read[1]"},
		{`{"deny_write": ["[a-"]}`, "deny_write[0]"},
		{`{"deny_write": ["*", "relative"]}`, "deny_write[1]"},
	} {
		_, err := ParseGuard([]byte(tt.in))
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("ParseGuard(%s) = %v, want a FieldError for %s", tt.in, err, tt.field)
		}
	}
}
