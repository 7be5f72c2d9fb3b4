//go:build linux && amd64

package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSupervisorReadsNotNotified: a plain read-only open of a readable file
// in the workspace never reaches the supervisor. Such opens are the most
// frequent file system call of every real command (the dynamic loader,
// python's imports, a compiler's headers), Landlock and the mounts decide
// them alone, and each notification would be a round trip through sbx's
// process (issue 31). The writes beside them must still be notified, each
// one, so that the counter is seen to count.
func TestSupervisorReadsNotNotified(t *testing.T) {
	for launch, sys := range launchVariants(t) {
		t.Run(launch, func(t *testing.T) {
			e := newSuperviseEnv(t, true)
			f := filepath.Join(e.ws, "data.txt")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			const n = 200
			got, res, _ := runProbe(t, e.pol, sys, e.ws, "read-many", strconv.Itoa(n), f)
			if got != "OK" {
				t.Fatalf("read-many: %s", got)
			}
			if res.Notified != 0 {
				t.Errorf("%d read-only opens of %s: the supervisor was notified %d times, want 0", n, f, res.Notified)
			}
			got, res, _ = runProbe(t, e.pol, sys, e.ws, "rewrite-many", strconv.Itoa(n), f)
			if got != "OK" {
				t.Fatalf("rewrite-many: %s", got)
			}
			if res.Notified < n {
				t.Errorf("%d opens for writing of %s: the supervisor was notified %d times, want at least %d", n, f, res.Notified, n)
			}
		})
	}
}
