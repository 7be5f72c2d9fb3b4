package fspath

import "testing"

func TestWritableUnder(t *testing.T) {
	roots, carve := []string{"/w", "/tmp"}, []string{"/w/.git"}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"/w", true}, {"/w/src/a.go", true}, {"/tmp/x", true},
		{"/w/.git", false}, {"/w/.git/config", false},
		{"/w/.gitignore", true}, // a sibling whose name starts like the carve-out
		{"/wx", false}, {"/", false}, {"/etc/passwd", false},
	} {
		if got := WritableUnder(tt.path, roots, carve); got != tt.want {
			t.Errorf("WritableUnder(%s) = %t, want %t", tt.path, got, tt.want)
		}
	}
}
