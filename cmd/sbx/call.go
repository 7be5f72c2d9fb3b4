package main

import (
	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/execjson"
)

// callReport is the report of `sbx run --report` and the core of the
// `sbx exec` result (execjson.CallReport).
type callReport = execjson.CallReport

// preparedReport is the report of a prepared call before it runs.
func preparedReport(p *call.Prepared) callReport { return execjson.PreparedReport(p) }

// startFailure maps a call that failed before or at start to what the CLI
// says and the exit status (execjson.StartFailure).
func startFailure(err error, cmd enforce.Command, reported int) (error, int) {
	return execjson.StartFailure(err, cmd, reported)
}
