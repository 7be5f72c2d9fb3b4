package fspath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestResolveExistingLongPath: resolving a path of many components that
// mostly do not exist stays fast. The old walk tried every prefix from the
// longest down, each EvalSymlinks walking the whole prefix: 20,000 components
// took 2.4 s, and FuzzParseGuard hit its deadline on such an input.
func TestResolveExistingLongPath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tail := strings.Repeat("/a", 100000)
	start := time.Now()
	got := ResolveExisting(filepath.Join(dir, "link") + tail)
	if d := time.Since(start); d > 5*time.Second { // the old walk: about a minute
		t.Errorf("ResolveExisting of a 100,000-component path took %v", d)
	}
	if want := real + tail; got != want {
		t.Errorf("resolved to %.60q…, want %.60q…", got, want)
	}
	for _, c := range []struct{ in, want string }{
		{"/", "/"},
		{filepath.Join(dir, "link"), real},
		{filepath.Join(dir, "link", "x", "y"), filepath.Join(real, "x", "y")},
		{filepath.Join(dir, "nope", "x"), filepath.Join(dir, "nope", "x")},
	} {
		if got := ResolveExisting(c.in); got != c.want {
			t.Errorf("ResolveExisting(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
