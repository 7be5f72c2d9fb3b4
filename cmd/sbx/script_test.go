package main

import (
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// update rewrites the golden output in testdata/script/*.txtar from what the
// commands actually print: go test ./cmd/sbx -run TestScripts -update
var update = flag.Bool("update", false, "rewrite testdata/script golden files")

// TestMain lets scripts run "sbx" as a real process: testscript re-executes
// this test binary under that name and calls Main.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"sbx": func() { os.Exit(Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) },
	})
}

// TestScripts runs every script in testdata/script. Beyond testscript's
// own conditions there are [landlock:N], [userns] and [root]
// (scriptCondition); an unknown condition such as [foo] fails the script
// rather than skipping it.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", UpdateScripts: *update,
		Condition: func(cond string) (bool, error) { return scriptCondition(cond) }})
}
