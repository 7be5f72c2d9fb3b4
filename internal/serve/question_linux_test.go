package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACPQuestionSaysWhatIsCreated: ACP's _meta.sbx carries the question's
// create (the missing tool directory sbx would make) and the requested
// domains; a cancelled question makes nothing (issue 29).
func TestACPQuestionSaysWhatIsCreated(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache", "go-build")
	ac, f, _ := acpServer(t, Options{})
	ws, turn := ac.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
	pending := ac.start("exec", toolExec("s", turn, "c3", ws, cache, true))
	ask := f.next("session/request_permission")
	meta := ask["params"].(map[string]any)["_meta"].(map[string]any)["sbx"].(map[string]any)
	if fmt.Sprint(meta["create"]) != "["+cache+"]" || !strings.Contains(fmt.Sprint(meta["additional_permissions"]), "proxy.golang.org") {
		t.Fatalf("_meta.sbx %v: want create [%s] and the domain", meta, cache)
	}
	f.reply(ask["id"], `{"outcome": {"outcome": "cancelled"}}`)
	ac.wait(pending)
	if _, err := os.Stat(cache); err == nil {
		t.Error("a call not allowed made the cache")
	}
}
