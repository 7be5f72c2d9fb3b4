package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"sbx/enforce"
	"sbx/enforce/host"
	"sbx/profiles"
)

func init() {
	register("run", command{summary: "run a command under the sandbox (stdio, exit status and signals pass through)", run: runCmd})
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// modeFlag parses a sandbox mode at flag time so a bad value is a flag error.
type modeFlag struct{ m *profiles.Mode }

func (f modeFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}
func (f modeFlag) Set(v string) error {
	m, err := profiles.ParseMode(v)
	if err != nil {
		return err
	}
	*f.m = m
	return nil
}

const runUsage = `Usage: sbx run [flags] -- COMMAND [ARG...]

Runs COMMAND under the sandbox for --mode plus the additional permissions
given by --allow-read, --allow-write and --network. stdio, the terminal and
signals behave as if COMMAND ran directly; sbx exits with COMMAND's status.

Examples:
  sbx run -- cat /etc/hostname                      # read-only: reads work
  sbx run --mode workspace-write -- touch out.txt   # writes in the cwd work
  sbx run --mode workspace-write --report r.json -- sh -c 'echo x > /etc/x'

Flags:
`

// runFlags are the flags that shape a call; `sbx explain` shares them.
type runFlags struct {
	mode          profiles.Mode
	cwd           string
	writableRoots listFlag
	allowRead     listFlag
	allowWrite    listFlag
	readOnly      listFlag
	network       bool
	excludeTmp    bool
	excludeTmpdir bool
	require       listFlag
}

func (rf *runFlags) register(fs *flag.FlagSet) {
	fs.Var(modeFlag{&rf.mode}, "mode", "sandbox mode: read-only, workspace-write or danger-full-access")
	fs.StringVar(&rf.cwd, "cwd", "", "working directory of the command (default: the current directory)")
	fs.Var(&rf.writableRoots, "writable-root", "extra writable directory in workspace-write (repeatable)")
	fs.Var(&rf.allowRead, "allow-read", "additional readable path (repeatable)")
	fs.Var(&rf.allowWrite, "allow-write", "additional writable path; must exist (repeatable)")
	fs.Var(&rf.readOnly, "read-only", "extra read-only carve-out inside writable roots, besides .git (repeatable)")
	fs.BoolVar(&rf.network, "network", false, "allow network access")
	fs.BoolVar(&rf.excludeTmp, "exclude-tmp", false, "do not make /tmp writable in workspace-write")
	fs.BoolVar(&rf.excludeTmpdir, "exclude-tmpdir", false, "do not make $TMPDIR writable in workspace-write")
	fs.Var(&rf.require, "require", "fail with 125 instead of running when FEATURE cannot be enforced (repeatable; "+strings.Join(enforce.Features, ", ")+")")
}

func (rf *runFlags) request(command []string) request {
	var add profiles.Profile
	if len(rf.allowRead) > 0 || len(rf.allowWrite) > 0 {
		add.FileSystem = &profiles.FileSystem{Read: rf.allowRead, Write: rf.allowWrite}
	}
	return request{
		Command: command, Cwd: rf.cwd, Mode: rf.mode, WritableRoots: rf.writableRoots,
		ExcludeTmp: rf.excludeTmp, ExcludeTmpdir: rf.excludeTmpdir, ReadOnly: rf.readOnly,
		Network: rf.network, Additional: add, Env: os.Environ(), Require: rf.require,
	}
}

func newFlagSet(name, usage string, stdio Stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	fs.Usage = func() {
		fmt.Fprint(stdio.Err, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps -h and flag errors to an exit status.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return ExitRefused, false
	}
	return 0, true
}

func runCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("run", runUsage, stdio)
	var rf runFlags
	rf.register(fs)
	report := fs.String("report", "", "write the JSON report to `FILE` when the command ends")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stdio.Err, "sbx run: command: empty command (usage: sbx run [flags] -- COMMAND [ARG...])")
		return ExitRefused
	}
	call, err := prepare(rf.request(fs.Args()))
	if err != nil && !errors.Is(err, errNotFound) {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		return ExitRefused
	}
	rep := enforce.NewReport(rf.mode.String())
	if err == nil {
		call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		call.ForwardSignals = true
		rep, err = host.Run(context.Background(), call)
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		code := exitStatusFor(err)
		if errors.Is(err, host.ErrStart) {
			code = rep.ExitCode
		}
		if code == ExitRefused {
			return code
		}
		rep.ExitCode = code
	}
	if *report != "" {
		if werr := writeJSONFile(*report, rep); werr != nil {
			fmt.Fprintf(stdio.Err, "sbx run: report: %v\n", werr)
		}
	}
	return rep.ExitCode
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
