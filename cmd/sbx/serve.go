package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/serve"
	"github.com/sbx-sandbox/sbx/internal/version"
)

func init() {
	register("serve", command{summary: "serve sessions, turns, grants and exec calls over JSON-RPC (stdio or a unix socket)", run: serveCmd})
}

const serveUsage = `Usage: sbx serve [--listen PATH] [--state-dir DIR | --ephemeral] [--answerers LIST] [--approver CMD | --approve-on-terminal] [--web 127.0.0.1:PORT] [--acp-socket PATH | --acp-fd N] [--answer-timeout DURATION] [--max-message BYTES] [--metrics PATH | --metrics 127.0.0.1:PORT]

Serves the sbx protocol (docs/serve.md): JSON-RPC 2.0, one JSON object per
line, on stdin/stdout, or with --listen on a unix socket made with mode 0600
whose every client must be sbx serve's own user or root (SO_PEERCRED; others
are closed and logged on stderr; an unprivileged server, which serves from a
user namespace of its own, sees root as the overflow uid and refuses it too).
Methods: initialize, session/open, session/set_preset, session/permissions,
session/close, turn/begin, turn/end, grants/apply,
exec (an sbx exec request plus session_id, turn_id and call_id),
exec/cancel, $/cancelRequest, call/status, shutdown, exit.

Every session has an append-only log in the state directory (--state-dir,
default $XDG_STATE_HOME/sbx, else ~/.local/state/sbx): the session opened,
presets, turns, grants, approvals asked and decided, calls started and
finished, each record on disk (fsync) before what it records is acted on
or acknowledged. A restarted server replays the logs and serves the same
sessions and grants; approvals left pending are settled cancelled and open
turns closed. sbx log show|verify DIR reads and checks the logs (docs/log.md).
--ephemeral keeps them in memory only (nothing survives the server).
An existing state directory that is not the server's user's own, or that
its group or others may write, is refused (exit 125).

Every call the server launches has the state directory masked (neither
readable nor writable: it holds every session's commands and grants) and
the directory of the --listen (and --metrics) socket read-only, by mounts,
even inside its writable root; give the socket a directory of its own.

A client that goes away has its running calls killed and their pending
approvals settled cancelled.

Approvals go down a waterfall of answerers (--answerers, comma-separated,
in order): the first that claims an approval answers it; when none claims,
the approval is unavailable and the call denied. The answerers:
  client    the connected clients that initialize with
            {"capabilities": {"approvals": true}}, asked with the JSON-RPC
            request approval/requested; claims while one bound to the
            approval's session (it opened or named the session) is connected
  terminal  the prompt of sbx run on the controlling terminal (/dev/tty);
            claims when the terminal can be opened
  web       the browser panel of --web; claims while a panel is open, an
            approval whose approval/asked record is the newest undecided,
            unclaimed one of its call (it never invents one)
  approver  the --approver CMD program (as sbx run --approver); claims all
  acp       an Agent Client Protocol client (an editor), asked with
            session/request_permission over --acp-socket PATH (a unix
            socket it listens on) or --acp-fd N (an inherited socket,
            already connected); claims the calls of sessions opened with
            acp_session_id, while the connection is up
Without --answerers: acp first when --acp-socket or --acp-fd is given,
then client, then web with --web, then approver with --approver, else
terminal when stdin and stderr are terminals and the server is on --listen
(or with --approve-on-terminal). A hung answerer is denied after
--answer-timeout (default 10m).

--web 127.0.0.1:PORT (or [::1]:PORT; port 0 picks one) serves the browser
panel on loopback: the pending approvals as cards with Reject and Allow
once, and each session's preset. Its URL carries a token made at each
start that every request of the page must carry; it is written to
web-url (0600) in the state directory, which calls cannot read, and
printed on stderr only when stderr is a terminal (else the address and
that file's path). Requests with another Host, from another site or
origin, or without the token are refused; one client (uid) holds at most
16 of its 64 connections (docs/serve.md, "Browser panel").

--metrics PATH (a unix socket, mode 0600, peers checked as --listen's) or
--metrics 127.0.0.1:PORT (or [::1]:PORT; every scrape carries
"Authorization: Bearer TOKEN", the token written to metrics-token (0600)
in the state directory) serves GET /metrics in the Prometheus text format:
calls, denials, approvals, retries, latencies, sessions (docs/serve.md,
"Metrics"). Off by default; no call can reach it.

Examples:
  sbx serve                                   # one client on stdio
  sbx serve --listen "$XDG_RUNTIME_DIR/sbx.sock" --approver /usr/local/bin/approve
  sbx serve --listen "$XDG_RUNTIME_DIR/sbx.sock" --web 127.0.0.1:0
  sbx serve --acp-socket "$XDG_RUNTIME_DIR/editor-acp.sock"

Exit status: 0 after shutdown and exit (or end of input on stdin), 1 after
an exit without shutdown, 125 bad flags, a socket (or --web's port) that
cannot be made or an ACP client that cannot be reached.

Flags:
`

func serveCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("serve", serveUsage, stdio)
	listen := fs.String("listen", "", "serve on a unix socket at `PATH` (mode 0600) instead of stdio")
	approver := fs.String("approver", "", "approver program `CMD` (request JSON on stdin, answer JSON on stdout)")
	onTerminal := fs.Bool("approve-on-terminal", false, "put the terminal answerer in the default waterfall, stdio or not")
	answerers := fs.String("answerers", "", "the approval waterfall: `LIST` of client, terminal, web, approver, acp, in order")
	webAddr := fs.String("web", "", "serve the browser approval panel on `127.0.0.1:PORT` or [::1]:PORT (loopback only)")
	acpSocket := fs.String("acp-socket", "", "ask the ACP client listening on the unix socket at `PATH` (the acp answerer)")
	acpFD := fs.String("acp-fd", "", "ask the ACP client connected to the inherited socket `N` (the acp answerer)")
	answerTimeout := fs.Duration("answer-timeout", serve.DefaultAnswerTimeout, "deny an approval its answerer has not answered within `DURATION`")
	stateDir := fs.String("state-dir", "", "keep the sessions' logs in `DIR` (default $XDG_STATE_HOME/sbx, else ~/.local/state/sbx)")
	ephemeral := fs.Bool("ephemeral", false, "keep the sessions' logs in memory only: nothing survives the server")
	limit := int64(serve.DefaultMaxMessage)
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics on the unix socket `PATH` or on 127.0.0.1:PORT with a token (off by default)")
	mcpListen := fs.String("mcp-listen", "", "set by sbx mcp: its unix socket at `PATH`, whose directory is read-only in every call")
	mcpPrivate := fs.String("mcp-private", "", "set by sbx mcp: the `DIR` of its token, masked in every call")
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
	if *answerers != "" && *onTerminal {
		fmt.Fprintln(stdio.Err, "sbx serve: --answerers and --approve-on-terminal: give one or the other (put terminal in --answerers)")
		return ExitRefused
	}
	if *answerTimeout <= 0 {
		fmt.Fprintln(stdio.Err, "sbx serve: --answer-timeout: must be more than 0 (an approval is never waited for forever)")
		return ExitRefused
	}
	if limit < 1<<10 || limit > 1<<30 {
		fmt.Fprintln(stdio.Err, "sbx serve: --max-message: must be from 1K to 1G")
		return ExitRefused
	}
	var webAt netip.AddrPort
	if *webAddr != "" {
		var err error
		if webAt, err = serve.ParseWebAddr(*webAddr); err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: --web: %v\n", err)
			return ExitRefused
		}
	}
	acpGiven := *acpSocket != "" || *acpFD != ""
	if *acpSocket != "" && *acpFD != "" {
		fmt.Fprintln(stdio.Err, "sbx serve: --acp-socket and --acp-fd: give one or the other")
		return ExitRefused
	}
	names := strings.Split(*answerers, ",")
	if *answerers == "" {
		names = defaultAnswerers(*approver != "", *webAddr != "", *onTerminal || *listen != "" && stdioTerminals(stdio), acpGiven)
	}
	if err := checkAnswerers(names, *approver, *webAddr != "", acpGiven); err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: --answerers: %v\n", err)
		return ExitRefused
	}
	if !*ephemeral {
		// Checked here, before serveInUserNS, as well as below: inside
		// the server's user namespace every uid it does not map (root's)
		// reads as the overflow uid, which is the server's own when it
		// runs as nobody, and a directory of root's would pass.
		if _, err := serveStateDir(*stateDir); errors.Is(err, journal.ErrUnsafeDir) {
			fmt.Fprintf(stdio.Err, "sbx serve: --state-dir: %v\n", err)
			return ExitRefused
		}
	}
	if code, served := serveInUserNS(args, *acpFD, stdio, func(format string, a ...any) { fmt.Fprintf(stdio.Err, "sbx serve: "+format+"\n", a...) }); served {
		return code
	}
	var acp *serve.ACPAnswerer
	if acpGiven {
		conn, err := acpConn(*acpSocket, *acpFD)
		if err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: %v\n", err)
			return ExitRefused
		}
		acp = serve.NewACPAnswerer(conn, int(limit), func(format string, a ...any) { fmt.Fprintf(stdio.Err, "sbx serve: "+format+"\n", a...) })
		defer acp.Close()
	}
	client, web, waterfall, err := buildWaterfall(names, *approver, *webAddr != "", acp)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: --answerers: %v\n", err)
		return ExitRefused
	}
	opt := serve.Options{
		Answerer: waterfall, Client: client, AnswerTimeout: *answerTimeout,
		MaxMessage: int(limit), Version: version.Get().Version,
		Executable:   func() (string, error) { return selfExecutable() },
		Capabilities: map[string]any{"doctor": host.Doctor(), "server_user_namespace": serverUserNS},
		Logf:         func(format string, a ...any) { fmt.Fprintf(stdio.Err, "sbx serve: "+format+"\n", a...) },
	}
	if *metricsAddr != "" {
		opt.Metrics = serve.NewMetrics()
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
		case errors.Is(err, journal.ErrUnsafeDir):
			// Never given up for memory: a directory others can write
			// is a misconfiguration its owner must see and fix.
			fmt.Fprintf(stdio.Err, "sbx serve: --state-dir: %v\n", err)
			return ExitRefused
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
		opt.OpenLog = func(id string) (serve.Log, error) { return openLogTimed(dir, id, opt.Metrics) }
	}
	// The panel's URL, with its token, is written where no call can read
	// it: the state directory, else (--ephemeral) a directory of its own.
	private := dir
	if (web != nil || metricsTCP(*metricsAddr)) && private == "" {
		d, err := os.MkdirTemp("", "sbx-serve-")
		if err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: --web: %v\n", err)
			return ExitRefused
		}
		defer os.RemoveAll(d)
		private = d
	}
	opt.Control = controlPaths(private, *listen, *approver)
	opt.Control = withMetricsControl(opt.Control, *metricsAddr) // the metrics socket's directory, read-only
	// sbx mcp's socket directory and token directory, for its sessions' calls
	opt.Control = withMCPControl(opt.Control, *mcpListen, *mcpPrivate)
	if *listen != "" && len(opt.Control.ReadOnly) > 0 {
		if fi, err := os.Stat(opt.Control.ReadOnly[0]); err == nil && fi.Mode().Perm()&0o002 != 0 {
			opt.Logf("--listen: the socket's directory %s is read-only in every call (a command could replace the socket there): give the socket a directory of its own", opt.Control.ReadOnly[0])
		}
	}
	srv := serve.New(opt)
	// The call/finished records the answers did not wait for are on disk
	// before the server exits (journal.Writer.Later).
	defer func() {
		if err := srv.Flush(); err != nil {
			opt.Logf("state: %v", err)
		}
	}()
	// Each sandboxed call's launch prepares the next call's namespaces
	// while its command runs: the next call skips making them.
	host.Resident()
	for _, p := range srv.Restore(sessions) {
		opt.Logf("state: session %s not restored: %v", p.SessionID, p.Err)
	}
	// SIGTERM, SIGINT and SIGHUP end the server: first its pending
	// approvals settle cancelled (recorded, withdrawn from the clients
	// asked while their connections are up), then every connection ends,
	// and with it every running call's tree.
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
	if web != nil {
		panel, err := web.ListenWeb(srv, webAt)
		if err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: --web: %v\n", err)
			return ExitRefused
		}
		defer panel.Close()
		if err := announcePanel(panel, private, stdio, opt.Logf); err != nil {
			fmt.Fprintf(stdio.Err, "sbx serve: --web: %v\n", err)
			return ExitRefused
		}
		go func() {
			if err := panel.Serve(ctx); err != nil {
				opt.Logf("%v", err)
			}
		}()
	}
	stopMetrics, code := startMetrics(ctx, opt.Metrics, *metricsAddr, private, opt.Logf, stdio)
	if code != 0 {
		return code
	}
	defer stopMetrics()
	if *listen == "" {
		in, out, done := pollableStdio(stdio.In, stdio.Out, stdio.Err)
		err := srv.ServeConn(ctx, in, out)
		done()
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

// defaultAnswerers is the waterfall without --answerers: the ACP client
// when one is connected (it claims only the calls of sessions bound to
// its ACP sessions, which a runtime binds because that editor's user is
// to answer them), the client, then the browser panel with --web (it
// claims only while a panel is open, so it goes before the answerers that
// claim whenever they can), then the --approver program when there is
// one, else the terminal when one is there to be asked.
func defaultAnswerers(approver, web, terminal, acp bool) []string {
	var names []string
	if acp {
		names = append(names, "acp")
	}
	names = append(names, "client")
	if web {
		names = append(names, "web")
	}
	switch {
	case approver:
		names = append(names, "approver")
	case terminal:
		names = append(names, "terminal")
	}
	return names
}

// acpConn connects to the ACP client: the unix socket at path, else the
// inherited fd. The error names the flag.
func acpConn(path, fd string) (*os.File, error) {
	if path != "" {
		f, err := serve.DialACP(path)
		if err != nil {
			return nil, fmt.Errorf("--acp-socket: %w", err)
		}
		return f, nil
	}
	n, err := strconv.Atoi(fd)
	if err != nil {
		return nil, fmt.Errorf("--acp-fd: %q is not a file descriptor number", fd)
	}
	f, err := serve.ACPFile(n)
	if err != nil {
		return nil, fmt.Errorf("--acp-fd: %w", err)
	}
	return f, nil
}

// stdioTerminals: a person sits at sbx serve's stdin and stderr. On stdio
// transport they carry the protocol, so the caller asks only with --listen.
func stdioTerminals(stdio Stdio) bool {
	in, ok := stdio.In.(*os.File)
	if !ok || !host.IsTerminal(in) {
		return false
	}
	errf, ok := stdio.Err.(*os.File)
	return ok && host.IsTerminal(errf)
}

// checkAnswerers refuses an unknown or repeated name, approver without
// --approver, --approver without approver, web without --web, --web
// without web, acp without --acp-socket or --acp-fd (acp: one is given),
// and one of those without acp.
func checkAnswerers(names []string, approver string, web, acp bool) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%q is named twice", n)
		}
		seen[n] = true
		switch n {
		case "client", "terminal":
		case "approver":
			if approver == "" {
				return errors.New("approver needs --approver CMD")
			}
		case "web":
			if !web {
				return errors.New("web needs --web 127.0.0.1:PORT")
			}
		case "acp":
			if !acp {
				return errors.New("acp needs --acp-socket PATH or --acp-fd N")
			}
		default:
			return fmt.Errorf("unknown answerer %q (want client, terminal, web, approver, acp)", n)
		}
	}
	if approver != "" && !seen["approver"] {
		return errors.New("--approver CMD is given but approver is not in the list")
	}
	if web && !seen["web"] {
		return errors.New("--web is given but web is not in the list")
	}
	if acp && !seen["acp"] {
		return errors.New("--acp-socket or --acp-fd is given but acp is not in the list")
	}
	return nil
}

// buildWaterfall makes the answerers of names, in order, as checkAnswerers
// allows them; acp is the connected ACP answerer (nil: none). client is
// the client answerer when named, web the browser panel's; they share one
// set of pending approvals.
func buildWaterfall(names []string, approver string, webFlag bool, acp *serve.ACPAnswerer) (client *serve.ClientAnswerer, web *serve.WebAnswerer, w serve.Waterfall, err error) {
	if err := checkAnswerers(names, approver, webFlag, acp != nil); err != nil {
		return nil, nil, nil, err
	}
	board := serve.NewClientAnswerer()
	for _, n := range names {
		switch n {
		case "client":
			client = board
			w = append(w, client)
		case "web":
			web = serve.NewWebAnswerer(board)
			w = append(w, web)
		case "terminal":
			w = append(w, serve.TerminalAnswerer{})
		case "approver":
			w = append(w, serve.Always{Answerer: escalate.CommandApprover{Argv: strings.Fields(approver)}})
		case "acp":
			w = append(w, acp)
		}
	}
	return client, web, w, nil
}

// serveStateDir is the directory of the sessions' logs: dir, else
// $XDG_STATE_HOME/sbx, else ~/.local/state/sbx; made 0700 if missing, and
// refused (journal.ErrUnsafeDir) when it is not the server's user's own or
// its group or others may write it.
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
	if err := journal.CheckDir(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// webURLFile is the file, in the server's private directory, that holds
// the panel's URL with its token.
const webURLFile = "web-url"

// announcePanel tells the operator where the panel is. Its URL carries the
// token that every request must bring, so the whole URL goes only where no
// call can read it: into private/web-url (0600; private is masked in
// every call) and, when standard error is a terminal, onto it. Standard
// error redirected to a file or a journal is readable by calls (they read
// the whole file system), so it gets the address without the token and
// the file's path.
func announcePanel(panel *serve.WebPanel, private string, stdio Stdio, logf func(string, ...any)) error {
	path := filepath.Join(private, webURLFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: never through a planted link
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, panel.URL())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if errf, ok := stdio.Err.(*os.File); ok && host.IsTerminal(errf) {
		logf("approval panel at %s", panel.URL())
		return nil
	}
	logf("approval panel at http://%s/ (its URL with the token is in %s)", panel.Authority(), path)
	return nil
}

// controlPaths are the server's own paths, kept out of every call it
// launches (serve.Options.Control): private (the state directory, or the
// directory of the panel's URL), masked, and read-only the directory of
// the socket at listen and the program of the approver command (a
// command that rewrote it would answer the next approvals). Each is
// resolved, as guard paths are: a mount covers the file a symbolic link
// names.
func controlPaths(private, listen, approver string) call.ControlPaths {
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		return abs
	}
	var c call.ControlPaths
	if private != "" {
		c = c.With(resolve(private), "sbx serve's state directory", true)
	}
	if listen != "" {
		abs, err := filepath.Abs(listen)
		if err != nil {
			abs = listen
		}
		c = c.With(resolve(filepath.Dir(abs)), "the directory of sbx serve's socket", false)
	}
	if argv := strings.Fields(approver); len(argv) > 0 {
		if prog, err := exec.LookPath(argv[0]); err == nil {
			c = c.With(resolve(prog), "sbx serve's --approver program", false)
		}
	}
	return c
}
