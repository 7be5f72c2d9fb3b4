package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func init() {
	register("run", command{summary: "run a command under the sandbox (stdio, exit status and signals pass through)", run: runCmd})
}

const runUsage = `Usage: sbx run [flags] -- COMMAND [ARG...]

Runs COMMAND under the sandbox for --mode plus the additional permissions
given by --allow-read, --allow-write and --network. stdio, the terminal and
signals behave as if COMMAND ran directly; sbx exits with COMMAND's status.

With --pty, COMMAND runs on a fresh pseudo-terminal (its stdout and stderr
are merged there, as on any terminal); Ctrl-C reaches it as on a terminal.
--stdin close gives COMMAND end-of-file instead of sbx's stdin.

Approval: an escalation that no grant covers is asked about on the terminal
(or by --approver): --approval-policy defaults to on-request here, but to
never in sbx exec, which a program calls with no one to ask. --grants FILE
gives the sticky grants of the session and turn (they apply without
asking); with --strict-review every escalation goes to the approver even
when those grants cover it, as a turn granted with strict_auto_review.

SIGTERM or SIGHUP to sbx is relayed to COMMAND, and its tree is killed
--kill-grace later (default 2s); SIGINT is relayed too. A SIGKILLed sbx
writes no --report (the tree dies with it, but on macOS).

Examples:
  sbx run -- cat /etc/hostname                      # read-only: reads work
  sbx run --pty -- bash                             # an interactive shell, sandboxed
  sbx run --mode workspace-write -- touch out.txt   # writes in the cwd work
  sbx run --mode workspace-write --report r.json -- sh -c 'echo x > /etc/x'

Flags:
`

// request builds the call from the flags; set tells which flags were given,
// so contradictory ones are refused instead of one silently winning.
func (rf *runFlags) request(command []string, set map[string]bool) (call.Request, error) {
	if err := rf.checkPaths(set); err != nil {
		return call.Request{}, err
	}
	var add profiles.Profile
	if len(rf.allowRead) > 0 || len(rf.allowWrite) > 0 {
		add.FileSystem = &profiles.FileSystem{Read: rf.allowRead, Write: rf.allowWrite}
	}
	var resolve []netrule.Resolve
	var err error
	if add.Network, resolve, err = rf.domains(set); err != nil {
		return call.Request{}, err
	}
	r := call.Request{
		Command: command, Cwd: rf.cwd, Mode: rf.mode, WritableRoots: rf.writableRoots,
		ExcludeTmp: rf.excludeTmp, ExcludeTmpdir: rf.excludeTmpdir, CarveOuts: rf.readOnly,
		Protect: rf.protect, ProtectField: "--protect", NoDefaultProtect: rf.noDefaultProtect,
		Network: rf.network, Additional: add, Env: os.Environ(), Require: rf.require, CapAdd: rf.capAdd, CapAddField: "--cap-add",
		Timeout: rf.timeout, Resolve: resolve, RetryOnSuccess: rf.retryOnSuccess, Tools: rf.tools,
	}
	if r.Limits, err = rf.limitsRequest(set).Limits(runLimitNames); err != nil {
		return r, err
	}
	if set["kill-grace"] {
		if rf.killGrace <= 0 || rf.killGrace > maxKillGrace {
			return r, &strictjson.FieldError{Field: "--kill-grace", Err: fmt.Errorf("must be more than 0 and at most %s", maxKillGrace)}
		}
		r.KillGrace = rf.killGrace
	}
	if set["timeout"] {
		if err := report.CheckTimeout("--timeout", rf.timeout); err != nil {
			return r, err
		}
	}
	if set["c"] && rf.shell == "" {
		return r, &strictjson.FieldError{Field: "-c", Err: errors.New("only valid with --shell")}
	}
	if set["login"] && rf.shell == "" {
		return r, &strictjson.FieldError{Field: "--login", Err: errors.New("only valid with --shell")}
	}
	if rf.shell != "" {
		kind, err := shells.ParseKind(rf.shell)
		if err != nil {
			return r, &strictjson.FieldError{Field: "--shell", Err: err}
		}
		if !set["c"] {
			return r, &strictjson.FieldError{Field: "-c", Err: errors.New("--shell needs -c SCRIPT")}
		}
		r.Shell = &shells.Spec{Kind: kind, Script: rf.script, Login: rf.login}
	}
	r.EnvPolicy = profiles.EnvPolicy{Mode: profiles.EnvMode(rf.envMode), Allow: rf.envAllow}
	if err := checkEnvAllow(r.EnvPolicy); err != nil {
		return r, err
	}
	for _, kv := range rf.setenv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return r, &strictjson.FieldError{Field: "--setenv", Err: fmt.Errorf("%q is not NAME=VALUE", kv)}
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
			return r, &strictjson.FieldError{Field: "--preset", Err: errors.New("contradicts --mode/--approval-policy: give one or the other")}
		}
		p, err := profiles.Builtin().Select(rf.preset)
		if err != nil {
			return r, &strictjson.FieldError{Field: "--preset", Err: err}
		}
		r.Mode, e.ApprovalPolicy = p.SandboxMode, p.ApprovalPolicy
	}
	if rf.approvalPolicy != "" {
		ap, err := profiles.ParseApprovalPolicy(rf.approvalPolicy)
		if err != nil {
			return r, &strictjson.FieldError{Field: "--approval-policy", Err: err}
		}
		e.ApprovalPolicy = ap
	}
	if rf.sandboxPermissions != "" {
		sp, err := profiles.ParseSandboxPermissions(rf.sandboxPermissions)
		if err != nil {
			return r, &strictjson.FieldError{Field: "--sandbox-permissions", Err: err}
		}
		e.SandboxPermissions = sp
	}
	if rf.escalateTo != "" {
		if set["sandbox-permissions"] && e.SandboxPermissions != profiles.RequireEscalated {
			return r, &strictjson.FieldError{Field: "--escalate", Err: errors.New("contradicts --sandbox-permissions " + rf.sandboxPermissions)}
		}
		target, err := profiles.ParseMode(rf.escalateTo)
		if err != nil {
			return r, &strictjson.FieldError{Field: "--escalate", Err: err}
		}
		e.SandboxPermissions, e.Target = profiles.RequireEscalated, target
	} else if e.SandboxPermissions == profiles.RequireEscalated {
		return r, &strictjson.FieldError{Field: "--escalate", Err: errors.New("required with --sandbox-permissions require_escalated: the target mode is missing")}
	}
	// Under use_default the flags are the person's (or program's) own
	// configuration and need no approval.
	r.Preauthorized = e.SandboxPermissions == profiles.UseDefault
	// Under with_additional_permissions --network is part of the request
	// the approver sees: call.Prepare makes it so for both front ends.
	if err := rf.loadGrants(e, set); err != nil {
		return r, err
	}
	if rf.approver != "" {
		e.Approver = withInterrupt(escalate.CommandApprover{Argv: strings.Fields(rf.approver)})
	} else {
		e.Approver = withInterrupt(escalate.TerminalApprover{})
	}
	return r, nil
}

// loadGrants reads --grants into e (strict JSON, the shape of sbx exec's
// grants) and applies --strict-review. Without grants strict review would
// change nothing (every escalation already goes to the approver), so it is
// refused, as other flags without effect are.
func (rf *runFlags) loadGrants(e *call.Escalation, set map[string]bool) error {
	if set["strict-review"] && !set["grants"] {
		return &strictjson.FieldError{Field: "--strict-review", Err: errors.New("only valid with --grants: without grants every escalation goes to the approver already")}
	}
	if !set["grants"] {
		return nil
	}
	data, err := os.ReadFile(rf.grants)
	if err != nil {
		return &strictjson.FieldError{Field: "--grants", Err: err}
	}
	if err := strictjson.Decode(data, &e.Grants); err != nil {
		return &strictjson.FieldError{Field: "--grants", Err: err}
	}
	e.Grants.TurnStrict = e.Grants.TurnStrict || rf.strictReview
	return nil
}

// runLimitNames name the limits by their flags in errors.
var runLimitNames = report.LimitNames{MemoryBytes: "--memory", Pids: "--pids", CPUs: "--cpus", Omit: "leave the flag out"}

// limitsRequest is the limits flags given, for the validation sbx exec's
// "limits" object goes through too.
func (rf *runFlags) limitsRequest(set map[string]bool) report.LimitsRequest {
	var lr report.LimitsRequest
	if set["memory"] {
		lr.MemoryBytes = &rf.limits.MemoryBytes
	}
	if set["pids"] {
		lr.Pids = &rf.limits.Pids
	}
	if set["cpus"] {
		lr.CPUs = &rf.limits.CPUs
	}
	return lr
}

// checkEnvAllow refuses --env-allow names that keep nothing: in clean mode
// the minimal set is fixed, and in inherit mode only secret-looking names
// are stripped, so allowing any other (literal) name changes nothing.
func checkEnvAllow(p profiles.EnvPolicy) error {
	switch p.Mode {
	case profiles.EnvAllowList:
	case profiles.EnvClean:
		if len(p.Allow) > 0 {
			return &strictjson.FieldError{Field: "--env-allow", Err: errors.New("no effect with --env-mode clean; use --env-mode allow-list, or --setenv NAME=VALUE")}
		}
	case profiles.EnvInherit:
		for _, name := range p.Allow {
			if !strings.ContainsAny(name, "*?[") && !profiles.SecretLooking(name) {
				return &strictjson.FieldError{Field: "--env-allow", Err: fmt.Errorf("%s is inherited anyway (--env-mode inherit strips only secret-looking names: %s); use --env-mode allow-list to keep only the names given", name, strings.Join(profiles.SecretPatterns, " "))}
			}
		}
	default:
		return &strictjson.FieldError{Field: "--env-mode", Err: fmt.Errorf("unknown mode %q (want inherit, clean, allow-list)", p.Mode)}
	}
	return nil
}

func runCmd(args []string, stdio Stdio) int {
	steptrace.Begin()
	defer steptrace.Flush()
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
	// Every flag is checked, and the report file opened, before anything
	// is made or started for the call.
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
	if *noDenials && req.Mode == profiles.DangerFullAccess {
		fmt.Fprintln(stdio.Err, "sbx run: --no-denial-reports: no effect in danger-full-access, which runs no supervisor")
		return ExitRefused
	}
	if set["report"] && *report == "" {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", &strictjson.FieldError{Field: "--report", Err: strictjson.ErrEmptyPath})
		return ExitRefused
	}
	out, err := openReport(*report)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		return ExitRefused
	}
	defer out.discard()
	if netns, ok := call.PrestartHint(req); ok && !*usePTY && *stdinMode == "pass" {
		// Most calls: sandboxed, no limits, sbx's own stdio. The
		// namespaces are made while the call is resolved below; a wrong
		// guess only costs them.
		host.Prestart(netns, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		defer host.DiscardPrestart()
	}
	steptrace.Mark("parse the flags, prestart")
	p, err := call.Prepare(context.Background(), req)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", call.Render(err, call.CLI))
		return ExitRefused
	}
	steptrace.Mark("prepare: policy, probe, compile the plan")
	rep := preparedReport(p)
	c := p.Call
	if err == nil {
		c.Cmd.Stdin, c.Cmd.Stdout, c.Cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		c.ForwardSignals = true
		c.NoDenialReports = *noDenials
		closeStdin := *stdinMode == "close"
		switch {
		case *usePTY:
			rep.Report, err = runOnPTY(c, size, closeStdin, stdio.Out)
		case closeStdin:
			rep.Report, err = runWithoutStdin(c)
		default:
			rep.Report, err = host.Run(context.Background(), c)
			steptrace.Mark("the command runs; wait, end init and supervisor")
		}
		if len(rep.Denials) > 0 {
			rep.Retry = runRetry(p, &rep.Report, err, retryCommandLine("run", fs.FlagSet, args))
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
		var code int
		err, code = startFailure(err, c.Cmd, rep.ExitCode)
		fmt.Fprintf(stdio.Err, "sbx run: %v\n", err)
		if code == ExitRefused {
			return code
		}
		rep.ExitCode = code
	}
	if werr := out.write(rep, stdio); werr != nil {
		fmt.Fprintf(stdio.Err, "sbx run: report: %v\n", werr)
	}
	return rep.ExitCode
}

// runTerminalFlags checks --pty, --pty-size and --stdin together and
// returns the pty's size.
func runTerminalFlags(usePTY bool, sizeFlag, stdinMode string, set map[string]bool) (ptySize, error) {
	if stdinMode != "pass" && stdinMode != "close" {
		return ptySize{}, &strictjson.FieldError{Field: "--stdin", Err: fmt.Errorf("%q is not pass or close", stdinMode)}
	}
	if !set["pty-size"] {
		return defaultPTYSize, nil
	}
	if !usePTY {
		return ptySize{}, &strictjson.FieldError{Field: "--pty-size", Err: errors.New("only valid with --pty")}
	}
	return parsePTYSize(sizeFlag)
}

// runWithoutStdin runs call with /dev/null as its stdin.
func runWithoutStdin(c host.Call) (report.Report, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return report.Report{}, err
	}
	defer devnull.Close()
	c.Cmd.Stdin = devnull
	return host.Run(context.Background(), c)
}

// reportFile is where --report goes. A file is opened (made) before the
// call starts, so a path sbx cannot write is refused before anything ran,
// and the report lands in that file even if the command replaced the path
// meanwhile (with a symlink to a file sbx may write and it may not).
type reportFile struct {
	path    string
	f       *os.File // nil: no --report, or one of sbx's own streams
	created bool     // sbx made the file: discard removes it
	written bool
}

// openReport opens path for the report; "" is no report.
func openReport(path string) (*reportFile, error) {
	r := &reportFile{path: path}
	if path == "" || ownStream(path) {
		return r, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	r.created = err == nil
	if errors.Is(err, os.ErrExist) {
		// There already, or a symlink (which O_EXCL does not follow).
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, &strictjson.FieldError{Field: "--report", Err: fmt.Errorf("cannot write %s: %w", path, errors.Unwrap(err))}
	}
	r.f = f
	return r, nil
}

// write replaces the file's content with v as indented JSON, or writes it
// to sbx's own stream.
func (r *reportFile) write(v any, stdio Stdio) error {
	if r.f == nil {
		if r.path == "" {
			return nil
		}
		return writeReport(r.path, v, stdio)
	}
	r.written = true
	defer r.f.Close()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fi, err := r.f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		if err := r.f.Truncate(0); err != nil {
			return err
		}
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return err
	}
	if now, err := os.Stat(r.path); err != nil || !os.SameFile(fi, now) {
		return fmt.Errorf("%s was replaced while the command ran: the report went to the file that was there when it started", r.path)
	}
	return nil
}

// discard closes a report file that was never written, and removes it if
// sbx made it: a refused call leaves nothing behind.
func (r *reportFile) discard() {
	if r.f == nil || r.written {
		return
	}
	fi, ferr := r.f.Stat()
	r.f.Close()
	if now, err := os.Lstat(r.path); r.created && ferr == nil && err == nil && os.SameFile(fi, now) {
		os.Remove(r.path)
	}
}

// ownStream reports whether path names sbx's standard output or error.
func ownStream(path string) bool {
	switch path {
	case "-", "/dev/stdout", "/dev/fd/1", "/dev/stderr", "/dev/fd/2":
		return true
	}
	return false
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

// domains is the network part of the call's profile from the domain
// flags, nil without them. Each value's syntax is checked here, so that an
// error names the flag itself (the JSON decoder checks its own); and
// --deny-domain needs --allow-domain or --network, a rule of the flags
// (JSON's denied_domains may stand alone: it asks for nothing). What would
// have no effect is call.Prepare's, for both front ends, named as a flag
// by call.Render: a host beside --network, --allow-private-addresses
// without --allow-domain (or beside --network), --resolve where no proxy
// runs (on the policy the call would run with, grants included).
func (rf *runFlags) domains(set map[string]bool) (*profiles.Network, []netrule.Resolve, error) {
	for _, f := range []struct {
		name string
		list []string
	}{{"--allow-domain", rf.allowDomain}, {"--deny-domain", rf.denyDomain}} {
		for _, v := range f.list {
			if _, err := netrule.ParsePattern(v); err != nil {
				return nil, nil, &strictjson.FieldError{Field: f.name, Err: fmt.Errorf("%q: %w", v, err)}
			}
		}
	}
	// --resolve is parsed once, here; the call carries the typed rules to
	// the proxy.
	resolve, err := netrule.ParseResolves(rf.resolve)
	if ie := (*netrule.IndexError)(nil); errors.As(err, &ie) {
		return nil, nil, &strictjson.FieldError{Field: "--resolve", Err: ie.Err}
	}
	if set["deny-domain"] && len(rf.allowDomain) == 0 && !rf.network {
		// With no network the proxy does not run.
		return nil, nil, &strictjson.FieldError{Field: "--deny-domain", Err: errors.New("only valid with --allow-domain or --network (the proxy applies it)")}
	}
	if len(rf.allowDomain) == 0 && len(rf.denyDomain) == 0 && !rf.allowPrivate {
		return nil, resolve, nil
	}
	// --network with a deny list alone: the full network goes through the
	// proxy, every host allowed but the denied ones (policy.Build); the
	// profile only denies, --network itself is the grant.
	return &profiles.Network{Enabled: len(rf.allowDomain) > 0, AllowedDomains: rf.allowDomain, DeniedDomains: rf.denyDomain, AllowPrivateAddresses: rf.allowPrivate}, resolve, nil
}
