package main

import (
	"errors"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/profiles"
)

// callReport is the report of `sbx run --report` and the core of the
// `sbx exec` result: what was enforced plus where the permissions came from.
type callReport struct {
	// SchemaVersion is SchemaVersion, first in every report and result.
	SchemaVersion schemaVersion `json:"schema_version"`
	// CallID echoes the call_id of an `sbx exec` request.
	CallID string `json:"call_id,omitempty"`
	enforce.Report
	Permissions call.Permissions `json:"permissions"`
	// Env names what the environment policy stripped and set (never values).
	Env profiles.EnvReport `json:"env"`
	// Retry is the exact-retry hint when the sandbox denied something.
	Retry *call.RetryHint `json:"retry,omitempty"`
}

// preparedReport is the report of a prepared call before it runs.
func preparedReport(p *call.Prepared) callReport {
	if p == nil {
		return callReport{}
	}
	return callReport{Report: p.Report, Permissions: p.Permissions, Env: p.Env}
}

// exitStatusFor maps a failure before or at start to an exit status.
func exitStatusFor(err error) int {
	switch {
	case errors.Is(err, call.ErrNotFound):
		return 127
	case errors.Is(err, host.ErrStart):
		return 126
	}
	return ExitRefused
}

// startFailure is the one mapping of a call that failed before or at
// start (err from call.Prepare or host.Run, not nil) to what the CLI says
// and the exit status: 127 not found, 126 not executable (or the status
// the report already has for a failed start), and ExitRefused for
// everything else, the E2BIG of too large arguments included.
func startFailure(err error, cmd host.Cmd, reported int) (error, int) {
	err = call.StartError(err, cmd)
	code := exitStatusFor(err)
	if errors.Is(err, host.ErrStart) {
		code = reported
	}
	return err, code
}
