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

	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/escalate"
	"github.com/sbx-sandbox/sbx/journal"
	"github.com/sbx-sandbox/sbx/serve"
	"github.com/sbx-sandbox/sbx/version"
)

func init() {
	register("serve", command{summary: "serve sessions, turns, grants and exec calls over JSON-RPC (stdio or a unix socket)", run: serveCmd})
}

const serveUsage = `Usage: sbx serve [--listen PATH] [--state-dir DIR | --ephemeral] [--approver CMD | --approve-on-terminal] [--max-message BYTES]

Serves the sbx protocol (docs/serve.md): JSON-RPC 2.0, one JSON object per
line, on stdin/stdout, or with --listen on a unix socket made with mode 0600
whose every client must be sbx serve's own user or root (SO_PEERCRED; others
are closed and logged on stderr). Methods: initialize, session/open,
session/set_preset, session/permissions, turn/begin, turn/end, grants/apply,
exec (an sbx exec request plus session_id, turn_id and call_id),
exec/cancel, $/cancelRequest, shutdown, exit.

Every session has an append-only log in the state directory (--state-dir,
default $XDG_STATE_HOME/sbx, else ~/.local/state/sbx): the session opened,
presets, turns, grants, approvals asked and decided, calls started and
finished, each record on disk (fsync) before what it records is acted on
or acknowledged. A restarted server replays the logs and serves the same
sessions and grants; approvals left pending are settled cancelled and open
turns closed. sbx log show|verify DIR reads and checks the logs (docs/log.md).
--ephemeral keeps them in memory only (nothing survives the server).

A client that goes away has its running calls killed and its pending
approvals settled cancelled. Approvals are asked by --approver CMD (the
program of sbx run --approver) or on the terminal (--approve-on-terminal);
with neither, every approval is unavailable and the call denied.

Examples:
  sbx serve                                   # one client on stdio
  sbx serve --listen "$XDG_RUNTIME_DIR/sbx.sock" --approver /usr/local/bin/approve

Exit status: 0 after shutdown and exit (or end of input on stdin), 1 after
an exit without shutdown, 125 bad flags or a socket that cannot be made.

Flags:
`

func serveCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("serve", serveUsage, stdio)
	listen := fs.String("listen", "", "serve on a unix socket at `PATH` (mode 0600) instead of stdio")
	approver := fs.String("approver", "", "approver program `CMD` (request JSON on stdin, answer JSON on stdout)")
	onTerminal := fs.Bool("approve-on-terminal", false, "ask approvals on the controlling terminal (/dev/tty)")
	stateDir := fs.String("state-dir", "", "keep the sessions' logs in `DIR` (default $XDG_STATE_HOME/sbx, else ~/.local/state/sbx)")
	ephemeral := fs.Bool("ephemeral", false, "keep the sessions' logs in memory only: nothing survives the server")
	limit := int64(serve.DefaultMaxMessage)
	fs.Var(sizeFlag{&limit}, "max-message", "refuse messages longer than `BYTES` (K/M/G suffixes; default 64M)")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stdio.Err, "sbx serve: unexpected argument %q (see sbx serve --help)\n", fs.Arg(0))
		return ExitRefused
	}
	if *approver != "" && *onTerminal {
		fmt.Fprintln(stdio.Err, "sbx serve: --approver and --approve-on-terminal: give one or the other")
		return ExitRefused
	}
	if limit < 1<<10 || limit > 1<<30 {
		fmt.Fprintln(stdio.Err, "sbx serve: --max-message: must be from 1K to 1G")
		return ExitRefused
	}
	opt := serve.Options{
		MaxMessage: int(limit), Version: version.Get().Version,
		Executable:   func() (string, error) { return selfExecutable() },
		Capabilities: map[string]any{"doctor": host.Doctor()},
		Logf:         func(format string, a ...any) { fmt.Fprintf(stdio.Err, "sbx serve: "+format+"\n", a...) },
	}
	switch {
	case *approver != "":
		opt.Answerer = serve.ApproverAnswerer{Approver: escalate.CommandApprover{Argv: strings.Fields(*approver)}}
	case *onTerminal:
		opt.Answerer = serve.ApproverAnswerer{Approver: escalate.TerminalApprover{}}
	}
	if *ephemeral && *stateDir != "" {
		fmt.Fprintln(stdio.Err, "sbx serve: --state-dir and --ephemeral: give one or the other")
		return ExitRefused
	}
	var sessions []journal.Session
	dir := ""
	if !*ephemeral {
		var err error
		dir, err = serveStateDir(*stateDir)
		switch {
		case err != nil && *stateDir == "":
			// The default place cannot be made (no home, a read-only
			// one): serve without durable logs rather than not at all,
			// and say so. An explicit --state-dir is never given up.
			opt.Logf("state: %v: the sessions' logs are kept in memory only (--state-dir DIR to keep them)", err)
			dir = ""
		case err != nil:
			fmt.Fprintf(stdio.Err, "sbx serve: --state-dir: %v\n", err)
			return ExitRefused
		}
	}
	if dir != "" {
		var problems []journal.Problem
		var err error
		if sessions, problems, err = journal.Replay(dir); err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: --state-dir: %v\n", err)
			return ExitRefused
		}
		for _, p := range problems {
			opt.Logf("state: %s", p)
		}
		opt.OpenLog = func(id string) (serve.Log, error) { return journal.Open(dir, id) }
	}
	srv := serve.New(opt)
	for _, p := range srv.Restore(sessions) {
		opt.Logf("state: session %s not restored: %v", p.SessionID, p.Err)
	}
	// SIGTERM, SIGINT and SIGHUP end the server: every connection ends, and
	// with it every running call's tree.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if *listen == "" {
		err := srv.ServeConn(ctx, stdio.In, stdio.Out)
		switch {
		case err == nil, errors.Is(err, io.EOF), ctx.Err() != nil:
			return 0
		case errors.Is(err, serve.ErrExitWithoutShutdown):
			return 1
		}
		fmt.Fprintf(stdio.Err, "sbx serve: %v\n", err)
		return 1
	}
	l, err := serve.Listen(*listen)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: --listen: %v\n", err)
		return ExitRefused
	}
	defer l.Close()
	if err := srv.ServeListener(ctx, l); err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: %v\n", err)
		return 1
	}
	return 0
}

// serveStateDir is the directory of the sessions' logs: dir, else
// $XDG_STATE_HOME/sbx, else ~/.local/state/sbx; made 0700 if missing.
func serveStateDir(dir string) (string, error) {
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if !filepath.IsAbs(base) {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no XDG_STATE_HOME and no home directory: %w", err)
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "sbx")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", err
	}
	return abs, nil
}
