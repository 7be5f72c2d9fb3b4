package call

import (
	"testing"

	"github.com/sbx-sandbox/sbx/profiles"
	"github.com/sbx-sandbox/sbx/report"
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
