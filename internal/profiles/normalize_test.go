package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestDecodeNormalizeRequestRefusals(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown top-level field", `{"cwd":"/x","scopes":"turn"}`, "scopes: unknown field"},
		{"unknown nested field of requested", `{"cwd":"/x","requested":{"file_system":{"wirte":["a"]}}}`, "requested.file_system.wirte: unknown field"},
		{"unknown field of requested", `{"cwd":"/x","requested":{"macos":{}}}`, "requested.macos: unknown field"},
		// The response is lenient about unknown fields, never about keys
		// that encoding/json would fold or overwrite.
		{"case variant in granted", `{"cwd":"/x","granted":{"Network":{"enabled":true}}}`, "granted.Network: unknown field (did you mean network?)"},
		{"nested case variant in granted", `{"cwd":"/x","granted":{"file_system":{"WRITE":["/"]}}}`, "granted.file_system.WRITE: unknown field (did you mean write?)"},
		{"duplicate in granted", `{"cwd":"/x","granted":{"file_system":{"write":["a"],"write":["/"]}}}`, "granted.file_system.write: duplicate key"},
		{"duplicate under an ignored field", `{"cwd":"/x","granted":{"macos":{"a":1,"a":2}}}`, "granted.macos.a: duplicate key"},
		{"granted not an object", `{"cwd":"/x","granted":[]}`, "granted: expected a JSON object"},
		{"unknown scope", `{"cwd":"/x","scope":"forever"}`, `scope: unknown grant scope "forever"`},
		{"strict not a bool", `{"cwd":"/x","strict_auto_review":"yes"}`, "strict_auto_review: expected a boolean, got JSON string"},
		{"trailing data", `{"cwd":"/x"} {}`, "trailing data"},
		{"duplicate scope", `{"cwd":"/x","scope":"turn","scope":"session"}`, "scope: duplicate key"},
		{"duplicate strict", `{"cwd":"/x","strict_auto_review":false,"strict_auto_review":true}`, "strict_auto_review: duplicate key"},
		{"case variant", `{"cwd":"/x","Granted":{"network":{"enabled":true}}}`, "Granted: unknown field"},
		{"nested duplicate", `{"cwd":"/x","granted":{"file_system":{"read":["a"],"read":["/"]}}}`, "granted.file_system.read: duplicate key"},
		{"network without enabled", `{"cwd":"/x","requested":{"network":{}}}`, "requested.network.enabled: required"},
		{"top-level array", `[]`, "expected a JSON object, got JSON array"},
		{"empty input", ``, "empty input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeNormalizeRequest([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNormalizeResponseRefusals(t *testing.T) {
	tests := []struct {
		name  string
		req   NormalizeRequest
		field string
	}{
		{"no cwd", NormalizeRequest{}, "cwd"},
		{"relative cwd", NormalizeRequest{Cwd: "repo"}, "cwd"},
		{"bad scope value", NormalizeRequest{Cwd: r, Scope: Scope(7)}, "scope"},
		{"empty requested path", NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: &FileSystem{Read: []string{""}}}}, "requested.file_system.read[0]"},
		{"empty requested", NormalizeRequest{Cwd: r, Granted: Profile{Network: &Network{Enabled: true}}}, "requested"},
		{"requested empty after normalisation", NormalizeRequest{Cwd: r, Requested: Profile{Network: &Network{Enabled: false}, FileSystem: &FileSystem{}}}, "requested"},
		{"NUL in granted path", NormalizeRequest{Cwd: r, Requested: Profile{Network: &Network{Enabled: true}}, Granted: Profile{FileSystem: &FileSystem{Write: []string{"a\x00b"}}}}, "granted.file_system.write[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NormalizeResponse(tt.req)
			var fe *strictjson.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError for %q", err, tt.field)
			}
		})
	}
}

func TestNormalizeResponse(t *testing.T) {
	fs := func(read, write []string) *FileSystem { return &FileSystem{Read: read, Write: write} }
	tests := []struct {
		name string
		req  NormalizeRequest
		want NormalizeResult
	}{
		{
			name: "session with strict yields an empty turn grant",
			req: NormalizeRequest{Cwd: r, Requested: Profile{Network: &Network{Enabled: true}}, Granted: Profile{Network: &Network{Enabled: true}},
				Scope: ScopeSession, StrictAutoReview: true},
			want: NormalizeResult{Scope: ScopeTurn},
		},
		{
			name: "turn with strict keeps strict",
			req: NormalizeRequest{Cwd: r, Requested: Profile{Network: &Network{Enabled: true}}, Granted: Profile{Network: &Network{Enabled: true}},
				Scope: ScopeTurn, StrictAutoReview: true},
			want: NormalizeResult{Permissions: p(true, nil, nil), Scope: ScopeTurn, StrictAutoReview: true},
		},
		{
			name: "relative paths resolve against cwd on both sides",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(nil, paths("build"))}, Granted: Profile{FileSystem: fs(nil, paths("./build/out"))}, Scope: ScopeSession},
			want: NormalizeResult{Permissions: p(false, nil, paths(r+"/build/out")), Scope: ScopeSession},
		},
		{
			name: "a .. escape in the grant is outside the request and dropped",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(nil, paths("build"))}, Granted: Profile{FileSystem: fs(nil, paths("build/../../etc"))}},
			want: NormalizeResult{Scope: ScopeTurn},
		},
		{
			name: "a .. that stays inside survives",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(paths("."), nil)}, Granted: Profile{FileSystem: fs(paths("src/../doc"), nil)}},
			want: NormalizeResult{Permissions: p(false, paths(r+"/doc"), nil), Scope: ScopeTurn},
		},
		{
			name: "a grant broader than the request gives nothing for that entry",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(nil, paths("child"))}, Granted: Profile{FileSystem: fs(nil, paths("."))}},
			want: NormalizeResult{Scope: ScopeTurn},
		},
		{
			name: "a broader entry does not swallow a valid narrower one",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(nil, paths("child"))}, Granted: Profile{FileSystem: fs(nil, paths(".", "child/x"))}},
			want: NormalizeResult{Permissions: p(false, nil, paths(r+"/child/x")), Scope: ScopeTurn},
		},
		{
			name: "a write where only a read was requested is dropped",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(paths("docs"), nil)}, Granted: Profile{FileSystem: fs(nil, paths("docs"))}},
			want: NormalizeResult{Scope: ScopeTurn},
		},
		{
			name: "granted network not requested",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{FileSystem: fs(paths("a"), nil)}, Granted: Profile{Network: &Network{Enabled: true}, FileSystem: fs(paths("a"), nil)}},
			want: NormalizeResult{Permissions: p(false, paths(r+"/a"), nil), Scope: ScopeTurn},
		},
		{
			name: "empty grant is a valid answer",
			req:  NormalizeRequest{Cwd: r, Requested: Profile{Network: &Network{Enabled: true}}, Scope: ScopeSession},
			want: NormalizeResult{Scope: ScopeSession},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeResponse(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got.GivenPaths = nil // TestNormalizeResponseGivenPaths
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v %s, want %+v %s", got, show(got.Permissions), tt.want, show(tt.want.Permissions))
			}
		})
	}
}

func TestDecodeNormalizeRequestScopeDefaultsToTurn(t *testing.T) {
	for _, in := range []string{`{"cwd":"/x"}`, `{"cwd":"/x","scope":null}`} {
		req, err := DecodeNormalizeRequest([]byte(in))
		if err != nil || req.Scope != ScopeTurn {
			t.Errorf("%s: scope %v, err %v; want turn", in, req.Scope, err)
		}
	}
	req, err := DecodeNormalizeRequest([]byte(`{"cwd":"/x","scope":"session","strict_auto_review":true}`))
	if err != nil || req.Scope != ScopeSession || !req.StrictAutoReview {
		t.Errorf("got %+v, %v", req, err)
	}
}

func TestDecodeNormalizeRequestIgnoresUnknownGrantedFields(t *testing.T) {
	in := `{"cwd":"/sbx-test/repo","requested":{"network":{"enabled":true},"file_system":{"write":["a"]}},
		"granted":{"network":{"enabled":true},"macos":{"preferences":"read_write"},"file_system":{"write":["a"],"glob_scan_max_depth":3}}}`
	req, err := DecodeNormalizeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	res, err := NormalizeResponse(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := p(true, nil, paths(r+"/a")); !reflect.DeepEqual(res.Permissions, want) {
		t.Errorf("permissions %s, want %s", show(res.Permissions), show(want))
	}
	if want := []string{"granted.macos", "granted.file_system.glob_scan_max_depth"}; !reflect.DeepEqual(res.Ignored, want) {
		t.Errorf("ignored %q, want %q", res.Ignored, want)
	}
}

func TestNormalizeResponseGivenPaths(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	res, err := NormalizeResponse(NormalizeRequest{
		Cwd:       dir,
		Requested: Profile{FileSystem: &FileSystem{Read: paths("link"), Write: paths("link/out")}},
		Granted:   Profile{FileSystem: &FileSystem{Read: paths("link/../real"), Write: paths("link/out", "/elsewhere")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	resolved, _ := filepath.EvalSymlinks(real) // t.TempDir may itself be under a symlink
	// The kernel enforces the object: the resolved path is what is granted.
	if want := p(false, nil, paths(resolved+"/out")); !reflect.DeepEqual(res.Permissions.WritePaths(), want.WritePaths()) {
		t.Errorf("write %q, want %q", res.Permissions.WritePaths(), want.WritePaths())
	}
	want := []GivenPath{{"read", resolved, "link/../real"}, {"write", resolved + "/out", "link/out"}}
	if !reflect.DeepEqual(res.GivenPaths, want) {
		t.Errorf("given_paths %+v, want %+v", res.GivenPaths, want)
	}
}
