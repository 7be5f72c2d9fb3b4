package call

import (
	"errors"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestPrestartHint(t *testing.T) {
	net := profiles.New(profiles.FullNetwork(), nil, nil)
	tests := []struct {
		name      string
		r         Request
		netns, ok bool
	}{
		{"read-only", Request{Mode: profiles.ReadOnly}, true, true},
		{"workspace-write", Request{Mode: profiles.WorkspaceWrite}, true, true},
		{"--network", Request{Mode: profiles.ReadOnly, Network: true}, false, true},
		{"the network asked for", Request{Mode: profiles.ReadOnly, Additional: net}, false, true},
		{"danger-full-access launches no sandbox", Request{Mode: profiles.DangerFullAccess}, false, false},
		{"limits make a cgroup first", Request{Mode: profiles.ReadOnly, Limits: report.Limits{Pids: 10}}, false, false},
	}
	for _, tt := range tests {
		if netns, ok := PrestartHint(tt.r); netns != tt.netns || ok != tt.ok {
			t.Errorf("%s: netns %v, ok %v; want %v, %v", tt.name, netns, ok, tt.netns, tt.ok)
		}
	}
}

// TestCheckStrings: a Request an embedder builds is held to the same rule
// per kind of string as the front ends' (issue 27 §4).
func TestCheckStrings(t *testing.T) {
	ok := Request{Command: []string{"true", ""}, Cwd: "", WritableRoots: []string{"/w"}}
	if err := ok.checkStrings(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, tt := range []struct {
		field string
		edit  func(*Request)
		want  error
	}{
		{"command[1]", func(r *Request) { r.Command = []string{"touch", "a\x00b"} }, strictjson.ErrNUL},
		{"cwd", func(r *Request) { r.Cwd = "/w\x00/../OUT" }, strictjson.ErrNUL},
		{"writable_roots[1]", func(r *Request) { r.WritableRoots = []string{"/w", ""} }, strictjson.ErrEmptyPath},
		{"call_id", func(r *Request) { r.Escalation.CallID = "c\x00" }, strictjson.ErrNUL},
	} {
		r := ok
		tt.edit(&r)
		err := r.checkStrings()
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.field, err, tt.want)
		}
	}
}
