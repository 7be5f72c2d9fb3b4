package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"sbx/enforce"
	"sbx/enforce/host"
	"sbx/escalate"
	"sbx/profiles"
	"sbx/shells"
)

func init() {
	register("run", command{summary: "run a command under the sandbox (stdio, exit status and signals pass through)", run: runCmd})
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// sizeFlag parses a byte size with an optional K/M/G/T suffix.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil || *f.n == 0 {
		return ""
	}
	return strconv.FormatInt(*f.n, 10)
}
func (f sizeFlag) Set(v string) error {
	n, err := enforce.ParseSize(v)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

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

With --pty, COMMAND runs on a fresh pseudo-terminal (its stdout and stderr
are merged there, as on any terminal); Ctrl-C reaches it as on a terminal.
--stdin close gives COMMAND end-of-file instead of sbx's stdin.

Examples:
  sbx run -- cat /etc/hostname                      # read-only: reads work
  sbx run --pty -- bash                             # an interactive shell, sandboxed
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
	shell         string
	script        string
	login         bool
	envMode       string
	envAllow      listFlag
	setenv        listFlag
	limits        enforce.Limits
	timeout       time.Duration

	sandboxPermissions string
	escalateTo         string
	justification      string
	approvalPolicy     string
	approver           string
	guard              string
	preset             string
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
	fs.StringVar(&rf.sandboxPermissions, "sandbox-permissions", "", "per-call escalation: use_default, with_additional_permissions (the --allow-* flags become a request needing approval) or require_escalated")
	fs.StringVar(&rf.escalateTo, "escalate", "", "ask to run this call in a wider `MODE` (implies --sandbox-permissions require_escalated)")
	fs.StringVar(&rf.justification, "justification", "", "why the call needs more than its standing mode (required with an escalation)")
	fs.StringVar(&rf.approvalPolicy, "approval-policy", "", "never, on-request, on-failure or untrusted (default on-request; never denies anything that needs asking)")
	fs.StringVar(&rf.approver, "approver", "", "approver program `CMD` (request JSON on stdin, answer JSON on stdout); default: ask on the terminal")
	fs.StringVar(&rf.guard, "guard", "", "deployment guard `FILE` (default "+escalate.DefaultGuardPath+" when it exists)")
	fs.StringVar(&rf.preset, "preset", "", "preset `KEY` setting mode and approval policy (see sbx presets)")
	fs.StringVar(&rf.shell, "shell", "", "run the -c script with this shell: bash, sh, zsh, pwsh, powershell or cmd (no profile files unless --login)")
	fs.StringVar(&rf.script, "c", "", "the script for --shell")
	fs.BoolVar(&rf.login, "login", false, "run --shell as a login shell (reads its profile files)")
	fs.StringVar(&rf.envMode, "env-mode", "inherit", "environment of the command: inherit (minus secret-looking names: "+strings.Join(profiles.SecretPatterns, " ")+", the name segments "+strings.Join(profiles.SecretSegments, " ")+", URL values with a password; docs/env.md), clean, or allow-list")
	fs.Var(&rf.envAllow, "env-allow", "variable name or glob to keep (allow-list mode, or a secret-looking name in inherit mode; repeatable)")
	fs.Var(&rf.setenv, "setenv", "set `NAME=VALUE` for the command (repeatable; never stripped)")
	fs.Var(sizeFlag{&rf.limits.MemoryBytes}, "memory", "memory limit of the whole command tree, e.g. 512M or 2G (cgroup; per-process RLIMIT_AS where no cgroup is writable)")
	fs.IntVar(&rf.limits.Pids, "pids", 0, "limit on processes and threads of the command tree (cgroup; RLIMIT_NPROC in the call's user namespace as fallback)")
	fs.Float64Var(&rf.limits.CPUs, "cpus", 0, "CPU bandwidth quota in cores, e.g. 0.5 (cgroup only)")
	fs.DurationVar(&rf.timeout, "timeout", 0, "kill the command tree after this `DURATION` (e.g. 30s, 5m)")
	fs.Var(&rf.require, "require", "fail with 125 instead of running when FEATURE cannot be enforced (repeatable; "+strings.Join(enforce.Features, ", ")+")")
}

// request builds the call from the flags; set tells which flags were given,
// so contradictory ones are refused instead of one silently winning.
func (rf *runFlags) request(command []string, set map[string]bool) (request, error) {
	var add profiles.Profile
	if len(rf.allowRead) > 0 || len(rf.allowWrite) > 0 {
		add.FileSystem = &profiles.FileSystem{Read: rf.allowRead, Write: rf.allowWrite}
	}
	r := request{
		Command: command, Cwd: rf.cwd, Mode: rf.mode, WritableRoots: rf.writableRoots,
		ExcludeTmp: rf.excludeTmp, ExcludeTmpdir: rf.excludeTmpdir, ReadOnly: rf.readOnly,
		Network: rf.network, Additional: add, Env: os.Environ(), Require: rf.require,
		Limits: rf.limits, Timeout: rf.timeout,
	}
	if rf.timeout < 0 {
		return r, &profiles.FieldError{Field: "--timeout", Err: errors.New("must not be negative")}
	}
	if rf.shell != "" || rf.script != "" {
		kind, err := shells.ParseKind(rf.shell)
		if err != nil {
			return r, &profiles.FieldError{Field: "--shell", Err: err}
		}
		if !set["c"] {
			return r, &profiles.FieldError{Field: "-c", Err: errors.New("--shell needs -c SCRIPT")}
		}
		r.Shell = &shells.Spec{Kind: kind, Script: rf.script, Login: rf.login}
	}
	r.EnvPolicy = profiles.EnvPolicy{Mode: profiles.EnvMode(rf.envMode), Allow: rf.envAllow}
	for _, kv := range rf.setenv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return r, &profiles.FieldError{Field: "--setenv", Err: fmt.Errorf("%q is not NAME=VALUE", kv)}
		}
		if r.EnvPolicy.Set == nil {
			r.EnvPolicy.Set = map[string]string{}
		}
		r.EnvPolicy.Set[k] = v
	}
	e := &r.Escalation
	e.ApprovalPolicy = profiles.ApprovalOnRequest
	e.Justification, e.GuardPath = rf.justification, rf.guard
	if rf.preset != "" {
		if set["mode"] || set["approval-policy"] {
			return r, &profiles.FieldError{Field: "--preset", Err: errors.New("contradicts --mode/--approval-policy: give one or the other")}
		}
		p, err := profiles.Builtin().Select(rf.preset)
		if err != nil {
			return r, &profiles.FieldError{Field: "--preset", Err: err}
		}
		r.Mode, e.ApprovalPolicy = p.SandboxMode, p.ApprovalPolicy
	}
	if rf.approvalPolicy != "" {
		ap, err := profiles.ParseApprovalPolicy(rf.approvalPolicy)
		if err != nil {
			return r, &profiles.FieldError{Field: "--approval-policy", Err: err}
		}
		e.ApprovalPolicy = ap
	}
	if rf.sandboxPermissions != "" {
		sp, err := profiles.ParseSandboxPermissions(rf.sandboxPermissions)
		if err != nil {
			return r, &profiles.FieldError{Field: "--sandbox-permissions", Err: err}
		}
		e.SandboxPermissions = sp
	}
	if rf.escalateTo != "" {
		if set["sandbox-permissions"] && e.SandboxPermissions != profiles.RequireEscalated {
			return r, &profiles.FieldError{Field: "--escalate", Err: errors.New("contradicts --sandbox-permissions " + rf.sandboxPermissions)}
		}
		target, err := profiles.ParseMode(rf.escalateTo)
		if err != nil {
			return r, &profiles.FieldError{Field: "--escalate", Err: err}
		}
		e.SandboxPermissions, e.Target = profiles.RequireEscalated, target
	}
	if rf.approver != "" {
		e.Approver = escalate.CommandApprover{Argv: strings.Fields(rf.approver)}
	} else {
		e.Approver = escalate.TerminalApprover{}
	}
	return r, nil
}

// flagSet is a subcommand's flags with its help text.
type flagSet struct {
	*flag.FlagSet
	usage string
	stdio Stdio
}

func newFlagSet(name, usage string, stdio Stdio) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package would print the whole usage after an error; parse
	// reports errors in one line instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, stdio: stdio}
}

// parse parses args: -h prints the help (exit 0), a bad flag prints one
// line naming it (exit 125); ok is true when the subcommand should go on.
func (fs *flagSet) parse(args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(fs.stdio.Err, fs.usage)
		fs.SetOutput(fs.stdio.Err)
		fs.PrintDefaults()
		return 0, false
	default:
		fmt.Fprintf(fs.stdio.Err, "sbx %s: %v (see sbx %s --help)\n", fs.Name(), err, fs.Name())
		return ExitRefused, false
	}
}

func runCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("run", runUsage, stdio)
	var rf runFlags
	rf.register(fs.FlagSet)
	report := fs.String("report", "", "write the JSON report to `FILE` when the command ends (- for standard output)")
	noDenials := fs.Bool("no-denial-reports", false, "run without the seccomp supervisor that reports denials (faster for write-heavy commands; the report then lists no denials and says so)")
	usePTY := fs.Bool("pty", false, "run COMMAND on a fresh pseudo-terminal (stdout and stderr merged); on a terminal, sbx's is made raw for the call and its size follows")
	ptySizeFlag := fs.String("pty-size", "", "window size `ROWSxCOLS` of the --pty terminal when sbx's stdin is not one (default 24x80)")
	stdinMode := fs.String("stdin", "pass", "pass: COMMAND reads sbx's stdin; close: COMMAND reads end-of-file (/dev/null, or Ctrl-D on a --pty)")
	explain := fs.Bool("explain-denials", false, "after the command, print what the sandbox denied and the retry command on stderr (default: when stderr is a terminal)")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if fs.NArg() == 0 && rf.shell == "" {
		fmt.Fprintln(stdio.Err, "sbx run: command: empty command (usage: sbx run [flags] -- COMMAND [ARG...])")
		return ExitRefused
	}
	if rf.mode != profiles.DangerFullAccess && rf.limits.IsZero() && !*usePTY && *stdinMode == "pass" {
		// Most calls: sandboxed, no limits, sbx's own stdio. The
		// namespaces are made while the call is resolved below; a wrong
		// guess only costs them.
		host.Prestart(!rf.network, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		defer host.DiscardPrestart()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	req, err := rf.request(fs.Args(), set)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		return ExitRefused
	}
	size, err := runTerminalFlags(*usePTY, *ptySizeFlag, *stdinMode, set)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		return ExitRefused
	}
	call, rep, err := prepare(req)
	if err != nil && !errors.Is(err, errNotFound) {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		return ExitRefused
	}
	if err == nil {
		call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		call.ForwardSignals = true
		call.NoDenialReports = *noDenials
		closeStdin := *stdinMode == "close"
		switch {
		case *usePTY:
			rep.Report, err = runOnPTY(call, size, closeStdin, stdio.Out)
		case closeStdin:
			rep.Report, err = runWithoutStdin(call)
		default:
			rep.Report, err = host.Run(context.Background(), call)
		}
		if len(rep.Denials) > 0 {
			rep.Retry = smallestRetry(call.Policy, req, call.Cmd.Dir, rep.Denials)
			orig, _ := req.Additional.Normalize(call.Cmd.Dir)
			rep.Retry.Argv = runRetryArgv(fs.FlagSet, args, rep.Retry.Retry, orig)
		}
		show := *explain
		if !set["explain-denials"] {
			f, ok := stdio.Err.(*os.File)
			show = ok && host.IsTerminal(f)
		}
		if show {
			explainDenials(stdio.Err, rep.Denials, rep.DenialsDropped, rep.Retry)
		}
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
		if werr := writeReport(*report, rep, stdio); werr != nil {
			fmt.Fprintf(stdio.Err, "sbx run: report: %v\n", werr)
		}
	}
	return rep.ExitCode
}

// runTerminalFlags checks --pty, --pty-size and --stdin together and
// returns the pty's size.
func runTerminalFlags(usePTY bool, sizeFlag, stdinMode string, set map[string]bool) (ptySize, error) {
	if stdinMode != "pass" && stdinMode != "close" {
		return ptySize{}, &profiles.FieldError{Field: "--stdin", Err: fmt.Errorf("%q is not pass or close", stdinMode)}
	}
	if !set["pty-size"] {
		return defaultPTYSize, nil
	}
	if !usePTY {
		return ptySize{}, &profiles.FieldError{Field: "--pty-size", Err: errors.New("only valid with --pty")}
	}
	return parsePTYSize(sizeFlag)
}

// runWithoutStdin runs call with /dev/null as its stdin.
func runWithoutStdin(call host.Call) (enforce.Report, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return enforce.Report{}, err
	}
	defer devnull.Close()
	call.Cmd.Stdin = devnull
	return host.Run(context.Background(), call)
}

// writeReport writes v as indented JSON to path. "-" and /dev/stdout mean
// sbx's standard output, /dev/stderr its standard error: written to the
// open stream, because reopening the path would truncate a file the caller
// redirected output to and overwrite the command's output in it.
func writeReport(path string, v any, stdio Stdio) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	switch path {
	case "-", "/dev/stdout", "/dev/fd/1":
		_, err = stdio.Out.Write(b)
		return err
	case "/dev/stderr", "/dev/fd/2":
		_, err = stdio.Err.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
