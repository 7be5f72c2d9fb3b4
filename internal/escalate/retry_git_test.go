package escalate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestSmallestRetryGit: a denied write into a repository's .git (git add,
// git commit) offers that .git writable first, the escalation second, with
// the risk in the reason; a write into its hooks or config offers only the
// escalation (issue 29).
func TestSmallestRetryGit(t *testing.T) {
	ws := t.TempDir()
	git := filepath.Join(ws, ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{ws}, CarveOuts: []string{git}}
	fs := func(op, path string) report.Denial { return report.Denial{Operation: op, Path: path, Reason: "r"} }
	r, _ := SmallestRetry(RetryInput{Policy: pol, SandboxPermissions: profiles.UseDefault,
		Denials: []report.Denial{fs("create", git+"/index.lock"), fs("create", git+"/objects/ab/cdef")}})
	if r.SandboxPermissions == nil || *r.SandboxPermissions != profiles.WithAdditionalPermissions || r.Grant == nil || !slices.Equal(r.Grant.WritePaths(), []string{git}) {
		t.Fatalf("retry %+v: want %s granted writable", r, git)
	}
	if !strings.Contains(r.Reason, "hooks, config") || !strings.Contains(r.Reason, "danger-full-access") {
		t.Errorf("reason %q does not say the risk and the alternative", r.Reason)
	}
	if len(r.Alternatives) != 2 || r.Alternatives[0].Grant == nil || len(r.Alternatives[0].Alternatives) != 0 ||
		r.Alternatives[1].EscalateTo == nil || *r.Alternatives[1].EscalateTo != profiles.DangerFullAccess {
		t.Errorf("alternatives %+v: want the narrow grant, then danger-full-access", r.Alternatives)
	}
	for _, p := range []string{git + "/hooks/pre-commit", git + "/config", git + "/commondir", git + "/info/attributes"} {
		op := "create"
		if strings.HasSuffix(p, "config") {
			op = "write"
		}
		r, _ := SmallestRetry(RetryInput{Policy: pol, SandboxPermissions: profiles.UseDefault, Denials: []report.Denial{fs(op, p), fs("create", git+"/index.lock")}})
		if r.EscalateTo == nil || r.Grant != nil || len(r.Alternatives) != 0 {
			t.Errorf("%s: retry %+v; want only the escalation", p, r)
		}
	}
}
