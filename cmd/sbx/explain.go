package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

func init() {
	register("explain", command{summary: "print the compiled sandbox plan for run flags, without running anything", run: explainCmd})
}

const explainUsage = `Usage: sbx explain [run flags] [--json] [-- COMMAND...]

Prints what "sbx run" with the same flags would enforce on this system:
namespaces, mounts, Landlock rules (path and rights), seccomp rules (syscall,
condition, errno, reason) and every degradation. Nothing is run.

Flags:
`

// afterDashes reports whether the last n of args, what the flags left,
// follow a "--" that ended them.
func afterDashes(args []string, n int) bool {
	i := len(args) - n - 1
	return i >= 0 && args[i] == "--"
}

func explainCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("explain", explainUsage, stdio)
	var rf runFlags
	rf.register(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	command := fs.Args()
	if len(command) > 0 && !afterDashes(args, len(command)) {
		// "sbx explain foo" is more likely a mistyped flag than a command
		// (a command comes after --, as the usage says).
		fmt.Fprintf(stdio.Err, "sbx explain: unexpected argument %q (a command goes after --: sbx explain [flags] -- COMMAND...)\n", command[0])
		return ExitRefused
	}
	if len(command) == 0 {
		command = []string{"true"}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	req, err := rf.request(command, set)
	if err == nil {
		var p *call.Prepared
		p, err = call.Prepare(context.Background(), req)
		err = call.Render(err, call.CLI)
		if errors.Is(err, call.ErrNotFound) {
			err = nil
		}
		if err == nil {
			var text string
			var plan any
			// The plan `sbx run` would compile from here: its command's
			// streams are sbx's own, and a terminal among them stays open
			// to it.
			p.Call.Cmd.Stdin, p.Call.Cmd.Stdout, p.Call.Cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			text, plan, err = host.Explain(p.Call)
			if err == nil {
				if *asJSON {
					return writeJSON(stdio.Out, plan)
				}
				fmt.Fprint(stdio.Out, text)
				return 0
			}
		}
	}
	fmt.Fprintf(stdio.Err, "sbx explain: %v\n", err)
	return ExitRefused
}
