package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/mcp/conf"
	"github.com/sbx-sandbox/sbx/internal/serve"
	"github.com/sbx-sandbox/sbx/internal/version"
)

func init() {
	register("mcp", command{summary: "serve sandboxed shell and file tools to an MCP client (Model Context Protocol, stdio)", run: mcpCmd})
}

const mcpUsage = `Usage: sbx mcp [--preset NAME | --mode MODE --approval-policy POLICY] [--cwd DIR] [--root DIR]... [--exclude-tmp] [--listen PATH|127.0.0.1:PORT] [--state-dir DIR | --ephemeral] [--approver CMD] [--answerers LIST] [--no-elicit] [--answer-timeout DURATION]

Serves sbx as a Model Context Protocol server on stdin/stdout (docs/mcp.md),
or with --listen PATH streamable HTTP on a unix socket made as sbx serve's
(mode 0600, only the server's uid and root, never a sandboxed call), or
with --listen 127.0.0.1:PORT (or [::1]:PORT; port 0 picks one) on loopback
TCP, where every request carries "Authorization: Bearer TOKEN" (the token
made at each start, written to mcp-token (0600) in the state directory,
which no call can read) and a request whose Origin is not a loopback one
is refused (DNS rebinding), for any MCP client to add as a tool provider.
Tools: shell (a command or a shell script), apply_patch, and the sbx fs operations (fs_write, fs_append,
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

The MCP server is the program sbx-mcp, beside sbx or on PATH (it links the
MCP SDK's HTTP code, which sbx keeps out to stay a static binary); each MCP
session is served by an sbx serve child with the flags above.

Examples:
  sbx mcp --mode workspace-write --approval-policy on-request --cwd ~/project
  sbx mcp --preset auto --root ~/project --approver /usr/local/bin/approve

MCP client configuration (Claude Desktop's claude_desktop_config.json, and
any client with an mcpServers table):
  {"mcpServers": {"sbx": {"command": "sbx", "args": ["mcp", "--cwd", "/home/me/project"]}}}

Exit status: 0 when the client ends the session, 125 bad flags or no
sbx-mcp.

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
	listen := fs.String("listen", "", "serve streamable HTTP on a unix socket at `PATH` (mode 0600; the server's uid and root only, never a sandboxed call), or on `127.0.0.1:PORT` or [::1]:PORT with a bearer token (mcp-token in the state directory), instead of stdio")
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
	if err := checkAnswerers(names, *approver, false, false); err != nil {
		return fail("--answerers: %v", err)
	}
	dir := *cwd
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return fail("--cwd: %v", err)
		}
	}
	resolve := func(flag, p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s %s: not a directory", flag, p)
		}
		// Resolved, so that one is found inside another as the kernel
		// sees them.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		return abs, nil
	}
	dir, err := resolve("--cwd", dir)
	if err != nil {
		return fail("%v", err)
	}
	cfg := conf.Config{Preset: *preset, SandboxMode: *mode, ApprovalPolicy: *policy, Cwd: dir,
		ExcludeTmp: *excludeTmp, NoElicit: *noElicit, Version: version.Get().Version}
	if metricsTCP(*listen) {
		if _, err := serve.ParseLoopback(*listen, "sbx mcp binds"); err != nil {
			return fail("--listen: %v, or a unix socket (a path, with a slash)", err)
		}
	}
	if *listen != "" && !metricsTCP(*listen) {
		if cfg.Listen, err = filepath.Abs(*listen); err != nil {
			return fail("--listen: %v", err)
		}
	}
	for _, r := range roots {
		abs, err := resolve("--root", r)
		if err != nil {
			return fail("%v", err)
		}
		cfg.Roots = append(cfg.Roots, abs)
	}
	if cfg.Sbx, err = selfExecutable(); err != nil {
		return fail("%v", err)
	}
	cfg.ServeArgs = []string{"serve", "--answerers", strings.Join(names, ","), "--answer-timeout", answerTimeout.String()}
	switch {
	case *ephemeral:
		cfg.ServeArgs = append(cfg.ServeArgs, "--ephemeral")
	case *stateDir != "":
		cfg.ServeArgs = append(cfg.ServeArgs, "--state-dir", *stateDir)
	}
	if *approver != "" {
		cfg.ServeArgs = append(cfg.ServeArgs, "--approver", *approver)
	}
	if cfg.Listen != "" {
		// The children serve stdio: told of the socket, they keep its
		// directory read-only in their calls, as sbx serve --listen does.
		cfg.ServeArgs = append(cfg.ServeArgs, "--mcp-listen", cfg.Listen)
	}
	if metricsTCP(*listen) {
		private, cleanup, err := mcpPrivate(*stateDir, *ephemeral)
		if err != nil {
			return fail("--listen: %v", err)
		}
		defer cleanup()
		cfg.ListenTCP, cfg.TokenFile = *listen, filepath.Join(private, mcpTokenFile)
		if *ephemeral {
			// The state directory of the children is masked in their
			// calls already; this one only when they are told of it.
			cfg.ServeArgs = append(cfg.ServeArgs, "--mcp-private", private)
		}
	}
	prog, err := mcpProgram(cfg.Sbx)
	if err != nil {
		return fail("%v", err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command(prog)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	cmd.Env = append(os.Environ(), conf.Env+"="+string(b))
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	// sbx mcp's own end signals are sbx-mcp's: it ends its sessions' sbx
	// serve children and exits.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		return fail("%v", err)
	}
	return 0
}

// mcpTokenFile holds sbx mcp --listen 127.0.0.1:PORT's bearer token, in
// the state directory (masked in every call of its sessions).
const mcpTokenFile = "mcp-token"

// mcpPrivate is the directory of the token of sbx mcp on loopback: the
// state directory (made as sbx serve makes it, the same default), or with
// ephemeral a directory of its own, removed by cleanup.
func mcpPrivate(stateDir string, ephemeral bool) (dir string, cleanup func(), err error) {
	if ephemeral {
		d, err := os.MkdirTemp("", "sbx-mcp-")
		if err != nil {
			return "", nil, err
		}
		return d, func() { os.RemoveAll(d) }, nil
	}
	d, err := serveStateDir(stateDir)
	if err != nil {
		return "", nil, fmt.Errorf("the token's state directory: %w (--state-dir DIR, or --ephemeral)", err)
	}
	return d, func() {}, nil
}

// withMCPControl keeps sbx mcp's own paths out of the calls of the sbx
// serve children it starts (sbx serve --mcp-listen, --mcp-private): the
// directory of its unix socket read-only (a call that could write there
// could replace the socket for the clients that connect later), and the
// directory of its loopback token masked.
func withMCPControl(c call.ControlPaths, listen, private string) call.ControlPaths {
	if listen != "" {
		for _, p := range controlPaths("", listen, "").ReadOnly {
			c = c.With(p, "the directory of sbx mcp's socket", false)
		}
	}
	if private != "" {
		for _, p := range controlPaths(private, "", "").Masked {
			c = c.With(p, "sbx mcp's token directory", true)
		}
	}
	return c
}

// mcpProgram is the sbx-mcp program: beside sbx, else on PATH.
func mcpProgram(sbx string) (string, error) {
	if real, err := filepath.EvalSymlinks(sbx); err == nil {
		sbx = real
	}
	name := "sbx-mcp"
	if runtime.GOOS == "windows" {
		name += ".exe" // the release's zips hold sbx-mcp.exe beside sbx.exe
	}
	beside := filepath.Join(filepath.Dir(sbx), name)
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		return beside, nil
	}
	p, err := exec.LookPath("sbx-mcp")
	if err != nil {
		return "", fmt.Errorf("sbx-mcp is neither beside %s nor on PATH: install it (go build ./cmd/sbx-mcp)", sbx)
	}
	return p, nil
}
