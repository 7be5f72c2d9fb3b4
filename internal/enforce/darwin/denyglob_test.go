package darwin

import (
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
)

// TestDenyGlobQuote: a pattern an SBPL regex literal cannot hold is left
// out of the profile and reported, never written broken.
func TestDenyGlobQuote(t *testing.T) {
	p := workspaceWrite()
	p.DenyGlobs = []policy.DenyGlob{
		{Pattern: proj + `/**/a"b`, Given: `**/a"b`, Access: policy.DenyRead},
		{Pattern: proj + "/**/.env", Given: "**/.env", Access: policy.DenyRead},
	}
	plan, err := Compile(p, Options{Paths: PathsStatic})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.Profile, `a"b`) || !strings.Contains(plan.Profile, `\.env`) {
		t.Errorf("profile deny patterns:\n%s", plan.Profile[strings.Index(plan.Profile, "== deny patterns"):])
	}
	found := false
	for _, d := range plan.Downgrades {
		found = found || d.Feature == "deny-glob-create" && strings.Contains(d.Reason, `a"b`)
	}
	if !found {
		t.Errorf("downgrades %v: want deny-glob-create naming the pattern", plan.Downgrades)
	}
}
