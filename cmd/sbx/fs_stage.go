package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sbx-sandbox/sbx/execjson"
	"github.com/sbx-sandbox/sbx/fsop"
)

// fsStageCommand is the hidden subcommand `sbx fs` runs inside the
// sandbox: it performs the one change of its spec with plain system calls
// (package fsop), so Landlock, the read-only mounts and the denial
// supervisor judge it exactly as they judge a command, and prints the
// outcome as one JSON object.
const fsStageCommand = execjson.FSStageCommand

func init() {
	register(fsStageCommand, command{hidden: true, summary: "internal: one file-system change inside the sandbox", run: fsStage})
}

// fsStageResult is the stage's output (execjson.FSStageResult).
type fsStageResult = execjson.FSStageResult

func fsStage(args []string, stdio Stdio) int {
	var op fsop.Op
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &op) != nil {
		fmt.Fprintln(stdio.Err, "sbx __fs: internal subcommand of sbx fs")
		return ExitRefused
	}
	var in io.Reader = strings.NewReader("")
	if op.Kind.TakesInput() {
		in = stdio.In
	}
	res := fsStageResult{OK: true}
	if err := op.Run(in); err != nil {
		res = fsStageResult{Error: err.Error()}
	}
	return writeJSON(stdio.Out, res)
}
