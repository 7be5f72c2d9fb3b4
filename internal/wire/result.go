package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// NewCallReport is the report of the prepared call p whose run reported
// rep and ended with outcome: where each permission came from, what the
// environment policy did, and the exact-retry hint in form when the sandbox
// denied something. The denials of a call that succeeded are Tolerated,
// and get a hint only when the call asked (retry_on_success).
func NewCallReport(p *call.Prepared, rep report.Report, outcome call.Outcome, form call.RetryForm) CallReport {
	cr := CallReport{Report: rep, Permissions: p.Permissions, Env: p.Env}
	if len(cr.Denials) > 0 {
		if outcome == call.Succeeded {
			cr.Denials = slices.Clone(cr.Denials)
			report.Tolerate(cr.Denials)
		}
		cr.Retry = p.Retry(cr.Denials, outcome, form)
	}
	return cr
}

// FSStageOutcome is the outcome of an fs change by its stage's stdout:
// Succeeded only when the stage said the change was made (ok).
func FSStageOutcome(stdout string) call.Outcome {
	var st FSStageResult
	if json.Unmarshal([]byte(stdout), &st) == nil && st.OK {
		return call.Succeeded
	}
	return call.Failed
}

// StartFailed records on res a call that failed before or at start (err
// from call.Prepare or the run, not nil): the exit status (126, 127) and
// the error object (exec_failed). When nothing the command did explains
// it (exit 125), it returns the refusal to answer with instead: a required
// feature missing stays unsupported (ErrorFor looks for it first), anything
// else is sbx's own failure.
func (res *Result) StartFailed(err error, cmd enforce.Command) error {
	err, code := StartFailure(err, cmd, res.ExitCode)
	if code == ExitRefused {
		return Internal(err)
	}
	res.ExitCode, res.Error = code, err.Error()
	res.ErrorDetail = ErrorFor(err, KindExecFailed)
	return nil
}

// FSStageResult is the output of the fs helper stage (one line of JSON on
// its stdout). Error is the system call's (or the patch's) message,
// unchanged; whether the sandbox caused it is for the outer sbx to say,
// from the supervisor's evidence.
type FSStageResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// NewFSResult maps the run of the fs helper stage for a change of kind op
// (its report, its stdout and stderr) to the result: done; failed (exit
// 1); denied (exit ExitDenied) only when the supervisor reported a
// denial, never from an errno; or, when the helper died before it said (a
// timeout, a limit), failed with at least its exit status.
func NewFSResult(rep CallReport, op fsop.Kind, stdout, stderr string) FSResult {
	res := FSResult{CallReport: rep, Op: op}
	var st FSStageResult
	died := json.Unmarshal([]byte(stdout), &st) != nil
	switch {
	case died:
		st.Error = fmt.Sprintf("fs helper exited %d without a result", rep.ExitCode)
		if rep.KilledBy != "" {
			st.Error = fmt.Sprintf("fs helper killed (%s) before it reported a result: the change may be partly made", rep.KilledBy)
		}
		if msg := strings.TrimSpace(stderr); msg != "" {
			st.Error += ": " + msg
		}
	case st.OK:
		res.OK = true
	}
	code := 0
	if !res.OK {
		res.Error = &ErrorObject{Kind: KindFSFailed, Message: st.Error}
		res.ErrorDetail = res.Error
		code = 1
		if len(res.Denials) > 0 {
			res.Error.Kind, code = KindFSDenied, ExitDenied
		}
		if died {
			code = max(code, rep.ExitCode)
		}
	}
	res.ExitCode = code
	return res
}
