package main

import (
	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// callReport is the report of `sbx run --report` and the core of the
// `sbx exec` result (wire.CallReport).
type callReport = wire.CallReport

// preparedReport is the report of a prepared call before it runs.
func preparedReport(p *call.Prepared) callReport { return wire.PreparedReport(p) }

// startFailure maps a call that failed before or at start to what the CLI
// says and the exit status (wire.StartFailure).
func startFailure(err error, cmd enforce.Command, reported int) (error, int) {
	return wire.StartFailure(err, cmd, reported)
}
