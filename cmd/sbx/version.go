package main

import (
	"encoding/json"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/version"
)

func init() {
	register("version", command{summary: "print the version, commit, Go version and build date of this sbx", run: versionCmd})
	// --version is looked up like a command name (Main dispatches on the
	// first argument), so it needs no special case in Main.
	register("--version", command{hidden: true, summary: "same as sbx version", run: versionCmd})
}

const versionUsage = `Usage: sbx version [--json]

Prints which sbx this is: the version (from the release build, else the
module version Go recorded, else "devel"), the commit, the Go version it was
built with and the build date, when they are known. --json prints them as
one object: {"version", "commit", "modified", "go_version", "date",
"source"}, where source says where they came from (ldflags, buildinfo or
none).

Examples:
  sbx --version
  sbx version --json

Flags:
`

func versionCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("version", versionUsage, stdio)
	asJSON := fs.Bool("json", false, "print the version information as one JSON object")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stdio.Err, "sbx version: unexpected argument %q (see sbx version --help)\n", fs.Arg(0))
		return ExitRefused
	}
	info := version.Get()
	if !*asJSON {
		fmt.Fprintln(stdio.Out, info)
		return 0
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx version: %v\n", err)
		return ExitRefused
	}
	stdio.Out.Write(append(b, '\n'))
	return 0
}
