package wire

import (
	"fmt"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestNewFSResult: what the fs helper said, or its death, maps to done,
// failed or denied, denied only beside the supervisor's evidence.
func TestNewFSResult(t *testing.T) {
	denied := []report.Denial{{Operation: "create", Path: "/etc/x"}}
	tests := []struct {
		name           string
		rep            report.Report
		stdout, stderr string
		wantOK         bool
		wantKind       string
		wantCode       int
		wantMsg        string
	}{
		{name: "done", stdout: `{"ok":true}`, wantOK: true},
		{name: "failed", stdout: `{"ok":false,"error":"remove x: no such file or directory"}`, wantKind: KindFSFailed, wantCode: 1, wantMsg: "remove x: no such file or directory"},
		{name: "denied", rep: report.Report{Denials: denied}, stdout: `{"ok":false,"error":"open: permission denied"}`, wantKind: KindFSDenied, wantCode: ExitDenied, wantMsg: "open: permission denied"},
		{name: "died", rep: report.Report{ExitCode: 137}, stderr: "oom\n", wantKind: KindFSFailed, wantCode: 137, wantMsg: "fs helper exited 137 without a result: oom"},
		{name: "killed", rep: report.Report{ExitCode: 137, KilledBy: "timeout"}, wantKind: KindFSFailed, wantCode: 137,
			wantMsg: "fs helper killed (timeout) before it reported a result: the change may be partly made"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := NewFSResult(CallReport{Report: tt.rep}, fsop.Write, tt.stdout, tt.stderr)
			if res.OK != tt.wantOK || res.ExitCode != tt.wantCode || res.Op != fsop.Write {
				t.Errorf("ok %v exit %d op %q", res.OK, res.ExitCode, res.Op)
			}
			if tt.wantOK {
				if res.Error != nil || res.ErrorDetail != nil {
					t.Errorf("error %+v on success", res.Error)
				}
				return
			}
			if res.Error == nil || res.Error.Kind != tt.wantKind || res.Error.Message != tt.wantMsg || res.ErrorDetail != res.Error {
				t.Errorf("error %+v detail %+v", res.Error, res.ErrorDetail)
			}
		})
	}
}

// TestStartFailed: a command not found is the result's 127 (exec_failed,
// ENOENT); anything that is not the command's is a refusal.
func TestStartFailed(t *testing.T) {
	var res Result
	if err := res.StartFailed(fmt.Errorf("prepare: %w", call.ErrNotFound), enforce.Command{Argv: []string{"nope"}}); err != nil {
		t.Fatalf("not found refused: %v", err)
	}
	if res.ExitCode != 127 || res.ErrorDetail == nil || res.ErrorDetail.Kind != KindExecFailed || res.ErrorDetail.Errno != "ENOENT" || res.Error == "" {
		t.Errorf("not found: %+v", res)
	}
	res = Result{}
	err := res.StartFailed(fmt.Errorf("cgroup: broken"), enforce.Command{Argv: []string{"true"}})
	if err == nil || ErrorFor(err, KindInvalidRequest).Kind != KindInternal || res.ExitCode != 0 || res.ErrorDetail != nil {
		t.Errorf("sbx's own failure: %v, result %+v", err, res)
	}
}

// TestFSStageOutcome: an fs change succeeded only when its stage said ok;
// a failure, a death or garbage is a failure (its denials get the retry).
func TestFSStageOutcome(t *testing.T) {
	for stdout, want := range map[string]call.Outcome{
		`{"ok":true}`:                   call.Succeeded,
		`{"ok":false,"error":"x"}`:      call.Failed,
		"":                              call.Failed,
		`{"ok":true`:                    call.Failed,
		`{"ok":"true","error":"mixed"}`: call.Failed,
	} {
		if got := FSStageOutcome(stdout); got != want {
			t.Errorf("%q: %v, want %v", stdout, got, want)
		}
	}
}
