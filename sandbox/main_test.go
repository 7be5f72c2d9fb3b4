package sandbox

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

// TestIsStage: only the stage's arguments make a process lock its main
// thread in init.
func TestIsStage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"prog"}, false},
		{[]string{"prog", "run"}, false},
		{[]string{"prog", host.StageCommand}, true},
		{[]string{"prog", "x", host.StageCommand}, false},
	} {
		if got := isStage(tt.args); got != tt.want {
			t.Errorf("isStage(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
