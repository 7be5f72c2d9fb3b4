//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM to sbx while the approver is asked settles the approval cancelled
// at once, without waiting for the approver's answer.
func TestExecApprovalWaitCancelledBySignal(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	prog := filepath.Join(dir, "approve.sh")
	script := "#!/bin/sh\ncat > /dev/null\ntouch " + started + "\nsleep 30\necho '{\"outcome\":\"allowed-once\"}'\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(started); err == nil {
				syscall.Kill(os.Getpid(), syscall.SIGTERM)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	begin := time.Now()
	code, out, stderr := execMain(t, `{"command":["/bin/true"],"cwd":"`+dir+`","sandbox_permissions":"require_escalated","escalate_to":"danger-full-access",`+
		`"justification":"j","approval_policy":"on-request","approver":["`+prog+`"]}`)
	if code != ExitRefused || !strings.Contains(stderr, "the approval was cancelled") || !strings.Contains(string(out), `"outcome": "cancelled"`) {
		t.Errorf("exit %d, stderr %q, stdout %s; want denied, cancelled", code, stderr, out)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %s: the signal did not settle the wait", d)
	}
}
