package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkExec is one exec of /bin/true through the server, request to
// response (bench/serve measures it beside bwrap). BENCH_PRESET=full-access
// measures the server without a sandbox.
func BenchmarkExec(b *testing.B) {
	c := newClientB(b)
	ws := b.TempDir()
	os.Mkdir(filepath.Join(ws, ".git"), 0o755)
	preset := os.Getenv("BENCH_PRESET")
	if preset == "" {
		preset = "auto"
	}
	c.ok("session/open", map[string]any{"session_id": "s", "cwd": ws, "preset": preset})
	turn := c.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	b.ResetTimer()
	for i := range b.N {
		res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": fmt.Sprint("c", i), "cwd": ws, "command": []string{"/bin/true"}})
		if res["exit_code"] != 0.0 {
			b.Fatalf("%v", res)
		}
	}
}
