package escalate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// toolCall asks for a tool cache that does not exist yet and two registry
// domains: what a retry of an empty-cache build asks (issue 29).
func toolCall() Call {
	c := additional()
	c.Additional = profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"proxy.golang.org", "*.example.com"},
		DeniedDomains: []string{"evil.example.com"}, AllowPrivateAddresses: true}, nil, []string{"/sbx-test/cache/go-build"})
	c.Create = []string{"/sbx-test/cache/go-build"}
	return c
}

// TestQuestionCarriesCreate: the one question says which missing
// directories sbx makes if the call is allowed, beside the requested
// paths, domains and target mode; an in-process answerer and the
// --approver program (stdin) get the same (issue 29).
func TestQuestionCarriesCreate(t *testing.T) {
	r := &recorder{outcome: AllowedOnce}
	if _, err := Decide(context.Background(), toolCall(), profiles.ApprovalOnRequest, r); err != nil || len(r.asked) != 1 {
		t.Fatalf("%v, asked %d", err, len(r.asked))
	}
	q := r.asked[0]
	if !slices.Equal(q.Create, []string{"/sbx-test/cache/go-build"}) || q.AdditionalPermissions == nil ||
		!slices.Equal(q.AdditionalPermissions.AllowedDomains(), toolCall().Additional.AllowedDomains()) || len(q.AdditionalPermissions.AllowedDomains()) != 2 {
		t.Fatalf("question %+v", q)
	}
	// Nothing to make: no create at all on the wire (omitempty), and the
	// target mode of an escalation still there.
	r = &recorder{outcome: AllowedOnce}
	if _, err := Decide(context.Background(), escalation(), profiles.ApprovalOnRequest, r); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r.asked[0])
	if strings.Contains(string(b), `"create"`) || !strings.Contains(string(b), `"target_mode":"danger-full-access"`) {
		t.Errorf("escalation question %s: want target_mode, no create", b)
	}

	saved := filepath.Join(t.TempDir(), "request.json")
	a := CommandApprover{Argv: []string{script(t, `cat > "$1"; echo '{"outcome":"allowed-once"}'`), saved}}
	if _, err := Decide(context.Background(), toolCall(), profiles.ApprovalOnRequest, a); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Create     []string         `json:"create"`
		Additional profiles.Profile `json:"additional_permissions"`
		New        profiles.Profile `json:"new_permissions"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := toolCall()
	if !slices.Equal(got.Create, want.Create) || mustJSON(t, got.Additional) != mustJSON(t, want.Additional) ||
		!slices.Equal(got.New.AllowedDomains(), want.Additional.AllowedDomains()) {
		t.Errorf("approver program's stdin %s: want create %v and the domains", data, want.Create)
	}
}

// TestPromptShowsQuestion: the terminal shows every part of the
// question: the domains (allowed, denied, private addresses), the paths
// with their access, and what sbx would create, cleaned of control
// characters.
func TestPromptShowsQuestion(t *testing.T) {
	req := requestFor(toolCall())
	req.Create = append(req.Create, "/x\x1b[2K")
	got := prompt(req)
	for _, want := range []string{
		"  network domain: proxy.golang.org\n", "  network domain: *.example.com\n", "  denied domain: evil.example.com\n",
		"  private addresses: allowed\n", "  write: /sbx-test/cache/go-build\n",
		"  create (missing, made as you): /sbx-test/cache/go-build\n", "  create (missing, made as you): /x?[2K\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Contains(got, "network: enabled") {
		t.Errorf("prompt %q: a control character, or domains shown as the whole network", got)
	}
	m := profiles.WorkspaceWrite
	if got := prompt(ApprovalRequest{CallID: "c", Tool: "shell", Cwd: repo, TargetMode: &m}); !strings.Contains(got, "to run under workspace-write\n") || strings.Contains(got, "create") {
		t.Errorf("escalation prompt %q", got)
	}
}
