package main

import (
	"github.com/sbx-sandbox/sbx/internal/run"
)

// fsStageCommand is the hidden subcommand `sbx fs` runs inside the
// sandbox: it performs the one change of its spec with plain system calls
// (package fsop), so Landlock, the read-only mounts and the denial
// supervisor judge it exactly as they judge a command, and prints the
// outcome as one JSON object (run.FSStageMain).
const fsStageCommand = run.FSStageCommand

func init() {
	register(fsStageCommand, command{hidden: true, summary: "internal: one file-system change inside the sandbox", run: func(args []string, stdio Stdio) int {
		return run.FSStageMain(args, stdio.In, stdio.Out, stdio.Err)
	}})
}
