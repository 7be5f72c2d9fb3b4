//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestPlanServerUserNS: inside the unprivileged server's user namespace a
// call takes the thread launch with every namespace root's gets, reports
// the user namespace, keeps no capability (--cap-add refused as for an
// unprivileged sbx run), and a call with limits takes the stage launch an
// unprivileged sbx run does, in a user namespace of its own. A direct
// launch with no outer sbx serve to send it to (directCtl nil, as here)
// says it runs in the server's user namespace.
func TestPlanServerUserNS(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("SKIP: the server's user namespace is made on x86-64 only")
	}
	sys := System{LandlockABI: 7, Privileged: true, UserNS: true, UserNotif: true, ProcFullyVisible: true, ServerUserNS: true}
	// The protected names exist: a missing one is a carve-out-create
	// downgrade (watched, see Plan.Watched), not this test's subject.
	cwd := t.TempDir()
	for _, n := range []string{".git", ".codex", ".agents"} {
		if err := os.Mkdir(filepath.Join(cwd, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(pol, sys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Enforcement()
	if p.Launch != LaunchThread || p.NewUserNS || !e.UserNamespace || !e.PIDNamespace || !e.NetworkNamespace || !e.MountNamespace || e.Procfs != "private" {
		t.Errorf("plan: launch %s, enforcement %+v", p.Launch, e)
	}
	if len(p.Downgrades) != 0 {
		t.Errorf("downgrades: %v", p.Downgrades)
	}
	if !strings.Contains(p.String(), "namespaces: user=true pid=true net=true mount=true") {
		t.Errorf("explain:\n%s", p)
	}
	limited, err := Compile(pol, sys, Options{Limits: report.Limits{MemoryBytes: 1 << 28}})
	if err != nil {
		t.Fatal(err)
	}
	if limited.Launch != LaunchStage || !limited.NewUserNS || !limited.NewPIDNS {
		t.Errorf("with limits: launch %s, user %t, pid %t", limited.Launch, limited.NewUserNS, limited.NewPIDNS)
	}
	pol.Capabilities = []string{"CAP_NET_RAW"}
	if _, err := Compile(pol, sys, Options{}); err == nil || !strings.Contains(err.Error(), "keeping a capability") {
		t.Errorf("--cap-add inside the server's user namespace: %v", err)
	}
	full, err := Compile(policy.Policy{Unrestricted: true}, sys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := full.Enforcement(); e.Launch != LaunchDirect || !e.UserNamespace {
		t.Errorf("danger-full-access: %+v", e)
	}
}
