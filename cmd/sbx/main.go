// Command sbx runs commands and file-system mutations under an OS sandbox.
// This file only dispatches to the subcommands, one per file.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// ExitRefused is the exit status when sbx refused or failed before the
// command started (bad flags, bad profile, a required feature missing).
const ExitRefused = 125

// command is one subcommand: run gets the arguments after its name and
// returns the process exit status.
type command struct {
	summary string
	hidden  bool
	run     func(args []string, stdio Stdio) int
}

// Stdio is the standard streams a subcommand talks to.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

func main() { os.Exit(Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) }

// Main runs sbx with args (without the program name) and returns the exit status.
func Main(args []string, stdio Stdio) int {
	if len(args) == 0 {
		// Not a request for help: a caller that forgot the command gets the
		// usage where errors go, and the status of a refusal.
		usage(stdio.Err)
		return ExitRefused
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdio.Out)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stdio.Err, "sbx: unknown command %q (see sbx --help)\n", args[0])
		return ExitRefused
	}
	return c.run(args[1:], stdio)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sbx runs a command under an OS sandbox and reports what was enforced and what was denied.

Usage:
  sbx <command> [flags]

Commands:
`)
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, strings.TrimLeft(`
Run "sbx <command> --help" for the flags of a command.
Exit status: the command's own; 128+N when it died of signal N; 125 when sbx
refused or failed before the command started; 126 not executable; 127 not found.
sbx fs: 0 done, 1 failed, 3 denied by the sandbox, 125 bad arguments.
sbx log: 0 clean, 1 problems found, 125 bad arguments or DIR unreadable.
`, "\n"))
}
