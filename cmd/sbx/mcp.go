package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/journal"
	"github.com/sbx-sandbox/sbx/mcp"
	"github.com/sbx-sandbox/sbx/serve"
	"github.com/sbx-sandbox/sbx/version"
)

func init() {
	register("mcp", command{summary: "serve sandboxed shell and file tools to an MCP client (Model Context Protocol, stdio)", run: mcpCmd})
}

const mcpUsage = `Usage: sbx mcp [--preset NAME | --mode MODE --approval-policy POLICY] [--cwd DIR] [--root DIR]... [--exclude-tmp] [--state-dir DIR | --ephemeral] [--approver CMD] [--answerers LIST] [--no-elicit] [--answer-timeout DURATION]

Serves sbx as a Model Context Protocol server on stdin/stdout (docs/mcp.md),
for any MCP client to add as a tool provider. Tools: shell (a command or a
shell script), apply_patch, and the sbx fs operations (fs_write, fs_append,
fs_mkdir, fs_remove, fs_move, fs_copy, fs_chmod). Each MCP session is one
sbx session of the same service as sbx serve (docs/serve.md): its mode and
approval policy from these flags, its grants, and its durable log in the
state directory, which sbx log reads.

Roots: a call's cwd must be inside one of the --root directories (default:
--cwd), narrowed, never widened, by the MCP roots of a client that offers
them; under workspace-write they are the call's writable roots.

A call the sandbox denied is a tool result with isError whose
structuredContent has denied: true, the denials and the retry; a command's
own non-zero exit is an ordinary result.

Approvals: the waterfall of sbx serve (--answerers, default client then
approver when --approver is given), where client is the MCP client itself,
asked through MCP elicitation when it declares that capability (not with
--no-elicit). Its user may allow once, allow for the session (the additional
permissions asked for become a session grant) or reject. Policy never
denies before anyone is asked.

Exit status: 0 when the client ends the session, 125 bad flags.

Flags:
`

func mcpCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("mcp", mcpUsage, stdio)
	preset := fs.String("preset", "", "the sbx session's preset `NAME` (sbx permissions)")
	mode := fs.String("mode", "", "the sbx session's sandbox `MODE` (with --approval-policy)")
	policy := fs.String("approval-policy", "", "the sbx session's approval `POLICY` (with --mode)")
	cwd := fs.String("cwd", "", "the sbx session's working `DIR` (default: the current directory)")
	var roots listFlag
	fs.Var(&roots, "root", "a `DIR` the sessions may work in (repeatable; default: --cwd); MCP roots narrow them, never widen them")
	excludeTmp := fs.Bool("exclude-tmp", false, "under workspace-write, /tmp and $TMPDIR are not writable: the roots alone are")
	approver := fs.String("approver", "", "approver program `CMD` (request JSON on stdin, answer JSON on stdout)")
	answerers := fs.String("answerers", "", "the approval waterfall: `LIST` of client, terminal, approver, in order")
	noElicit := fs.Bool("no-elicit", false, "never ask the MCP client (elicitation): only the other answerers")
	answerTimeout := fs.Duration("answer-timeout", serve.DefaultAnswerTimeout, "deny an approval not answered within `DURATION`")
	stateDir := fs.String("state-dir", "", "keep the sessions' logs in `DIR` (default $XDG_STATE_HOME/sbx, else ~/.local/state/sbx)")
	ephemeral := fs.Bool("ephemeral", false, "keep the sessions' logs in memory only")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stdio.Err, "sbx mcp: "+format+"\n", a...)
		return ExitRefused
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q (see sbx mcp --help)", fs.Arg(0))
	}
	if *preset != "" && (*mode != "" || *policy != "") {
		return fail("--preset and --mode/--approval-policy: give one or the other")
	}
	if *ephemeral && *stateDir != "" {
		return fail("--state-dir and --ephemeral: give one or the other")
	}
	if *answerTimeout <= 0 {
		return fail("--answer-timeout: must be more than 0")
	}
	names := strings.Split(*answerers, ",")
	if *answerers == "" {
		names = []string{"client"}
		if *approver != "" {
			names = append(names, "approver")
		}
	}
	for _, n := range names {
		if n == "web" || n == "acp" {
			return fail("--answerers: %s is not an answerer of sbx mcp (use sbx serve)", n)
		}
	}
	client, _, waterfall, err := buildWaterfall(names, *approver, false, nil)
	if err != nil {
		return fail("--answerers: %v", err)
	}
	dir := *cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fail("--cwd: %v", err)
		}
	}
	var rootDirs []string
	for _, r := range append([]string{}, roots...) {
		abs, err := filepath.Abs(r)
		if err != nil {
			return fail("--root: %v", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return fail("--root %s: not a directory", r)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		rootDirs = append(rootDirs, abs)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // as the roots are, so that one is found inside another
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stdio.Err, "sbx mcp: "+format+"\n", a...) }
	opt := serve.Options{
		Answerer: waterfall, Client: client, AnswerTimeout: *answerTimeout,
		Version:      version.Get().Version,
		Executable:   func() (string, error) { return selfExecutable() },
		Capabilities: map[string]any{"doctor": host.Doctor()},
		Logf:         logf,
	}
	var sessions []journal.Session
	state := ""
	if !*ephemeral {
		if state, err = serveStateDir(*stateDir); err != nil {
			return fail("--state-dir: %v", err)
		}
		var problems []journal.Problem
		if sessions, problems, err = journal.Replay(state); err != nil {
			return fail("--state-dir: %v", err)
		}
		for _, p := range problems {
			logf("state: %s", p)
		}
		opt.OpenLog = func(id string) (serve.Log, error) { return journal.Open(state, id) }
	}
	// IMPORTANT: sbx mcp does not serve from a user namespace of its own
	// as sbx serve does (serveInUserNS): unprivileged, its calls get the
	// state directory masked only where they get a mount namespace; else
	// their reports have the mask and mountns downgrades.
	opt.Control = controlPaths(state, "", *approver)
	srv := serve.New(opt)
	defer func() {
		if err := srv.Flush(); err != nil {
			logf("state: %v", err)
		}
	}()
	host.Resident()
	for _, p := range srv.Restore(sessions) {
		logf("state: session %s not restored: %v", p.SessionID, p.Err)
	}
	m, err := mcp.New(mcp.Options{Serve: srv, Preset: *preset, SandboxMode: *mode, ApprovalPolicy: *policy,
		Cwd: dir, Roots: rootDirs, ExcludeTmp: *excludeTmp, NoElicit: *noElicit, Version: version.Get().Version})
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			srv.Shutdown()
			cancel()
		case <-ctx.Done():
		}
	}()
	t := &sdk.IOTransport{Reader: readCloser{stdio.In}, Writer: writeCloser{stdio.Out}}
	if err := m.SDK().Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		logf("%v", err)
	}
	// The sessions' connections end (their calls killed, their records
	// written) before the logs are flushed.
	m.Wait()
	return 0
}

// readCloser and writeCloser give sbx's standard streams the Close the
// SDK's transport wants; closing them is left to the process's end.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
