package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCallStartedWithoutEnvValues: the command gets its env, and the
// call/started record keeps the names but no value (a runtime passes
// tokens there; the log stays on disk).
func TestCallStartedWithoutEnvValues(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	const secret = "hunter2-c0ffee"
	// The command compares with a file, so that its argv holds no secret.
	if err := os.WriteFile(filepath.Join(ws, "expected"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws,
		"command": []string{"sh", "-c", `test "$SBX_TEST_TOKEN" = "$(cat expected)" && test "$OTHER" = x`},
		"env":     map[string]string{"SBX_TEST_TOKEN": secret, "OTHER": "x"}})
	if res["exit_code"] != float64(0) {
		t.Fatalf("the command did not get its env: %v", res)
	}
	for _, r := range c.logs.Get("s").Records() {
		if bytes.Contains(r.Data, []byte(secret)) {
			t.Errorf("record %s holds the env value: %s", r.Type, r.Data)
		}
	}
	started := c.recordData("s", RecCallStarted)
	if len(started) != 1 {
		t.Fatalf("call/started records: %v", started)
	}
	names, _ := started[0]["env_names"].([]any)
	if !slices.Equal(names, []any{"OTHER", "SBX_TEST_TOKEN"}) {
		t.Errorf("env_names = %v", started[0]["env_names"])
	}
	req, _ := started[0]["request"].(map[string]any)
	if _, ok := req["env"]; ok || req["call_id"] != "c1" || req["cwd"] != ws {
		t.Errorf("request = %v: want the params without env", req)
	}
}
