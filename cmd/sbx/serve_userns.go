package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

// serveUserNSCommand is the hidden subcommand of an unprivileged sbx serve
// re-executed inside its user namespace: `sbx __serve-userns READYFD
// ARGS...`, ARGS being sbx serve's.
const serveUserNSCommand = "__serve-userns"

func init() {
	register(serveUserNSCommand, command{hidden: true, summary: "internal: sbx serve inside its user namespace", run: serveUserNSInner})
}

// serverUserNS is what initialize reports as the capability
// server_user_namespace: whether this server serves from a user namespace
// of its own, made at start-up, and why not.
var serverUserNS = map[string]any{"available": false, "detail": ""}

// serveInUserNS runs sbx serve (args) inside a user namespace made for it,
// when it is unprivileged and user namespaces work (host.ServerUserNSWanted):
// there every call launches from a locked launcher thread, as root's do,
// instead of a stage of its own (one Go start per server, not per call).
// This process stays outside, forwards SIGINT, SIGTERM and SIGHUP, and
// exits as the inner server does; its death (SIGKILL included) kills the
// inner server, and with it every call.
//
// served is false when the server is to serve in this process: no
// namespace is wanted (root, none allowed: reason in serverUserNS), or it
// could not be made or entered (logged), before the inner server read
// anything. acpFD is --acp-fd, which the inner server inherits at the same
// number.
func serveInUserNS(args []string, acpFD string, stdio Stdio, logf func(string, ...any)) (code int, served bool) {
	if serverUserNS["available"] == true {
		return 0, false // serveUserNSInner: inside it already
	}
	want, why := host.ServerUserNSWanted()
	if !want {
		serverUserNS["detail"] = why
		return 0, false
	}
	if stdio.In != os.Stdin || stdio.Out != os.Stdout || stdio.Err != os.Stderr {
		// Main called in-process (tests): there are no fds to hand over.
		serverUserNS["detail"] = "standard streams are not the process's"
		return 0, false
	}
	files := []int{0, 1, 2}
	ready := 3
	if acpFD != "" {
		n, err := strconv.Atoi(acpFD)
		if err != nil || n < 3 {
			return 0, false // acpConn says why
		}
		for len(files) <= n {
			files = append(files, -1)
		}
		files[n], ready = n, n+1
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	child, err := host.SpawnServerUserNS(append([]string{"sbx", serveUserNSCommand, strconv.Itoa(ready)}, args...), files, ready)
	if err != nil {
		serverUserNS["detail"] = err.Error()
		logf("%v: each call makes its own (a stage per call)", err)
		return 0, false
	}
	proc, err := os.FindProcess(child.Pid)
	if err != nil {
		// Not on Unix, where it only wraps the pid; the child dies with
		// this thread (its parent-death signal).
		child.Ctl.Close()
		fmt.Fprintf(stdio.Err, "sbx serve: the server in its user namespace: %v\n", err)
		return 1, true
	}
	var b [4096]byte
	n, _ := child.Ctl.Read(b[:]) // one message: "ok", or why not
	line := strings.TrimSpace(string(b[:n]))
	if line != "ok" {
		child.Ctl.Close()
		proc.Kill()
		proc.Wait()
		if line == "" {
			line = "the server in it ended before it was ready"
		}
		serverUserNS["detail"] = line
		logf("user namespace: %s: each call makes its own (a stage per call)", line)
		return 0, false
	}
	go host.ServeDirect(child.Ctl)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				proc.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	st, err := proc.Wait()
	close(done)
	// The inner server is gone: so are its calls (their PID namespaces'
	// init die with its threads), and the ones this process launched for
	// it must be too, before it exits.
	host.EndDirect()
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: wait for the server in its user namespace: %v\n", err)
		return 1, true
	}
	if ws, ok := st.Sys().(interface {
		Signaled() bool
		Signal() syscall.Signal
	}); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return st.ExitCode(), true
}

// serveUserNSInner is sbx serve inside the user namespace serveInUserNS
// made: it enters it (host.EnterServerUserNS), tells the outer sbx on
// READYFD ("ok", or why not, before reading anything), then serves.
func serveUserNSInner(args []string, stdio Stdio) int {
	if len(args) < 1 {
		fmt.Fprintln(stdio.Err, "sbx: __serve-userns: internal: missing READYFD")
		return ExitRefused
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fmt.Fprintf(stdio.Err, "sbx: __serve-userns: internal: bad READYFD %q\n", args[0])
		return ExitRefused
	}
	ctl := os.NewFile(uintptr(fd), "serve-ctl")
	if err := host.EnterServerUserNS(ctl); err != nil {
		fmt.Fprintf(ctl, "%v\n", err)
		return ExitRefused
	}
	fmt.Fprintln(ctl, "ok") // ctl stays open: the direct launches (host.ServeDirect)
	serverUserNS["available"] = true
	serverUserNS["detail"] = "one user namespace made at start-up, mapping uid " + strconv.Itoa(os.Getuid()) + " and gid " + strconv.Itoa(os.Getgid()) + " to themselves: each call launches from a locked launcher thread (no stage, no Go start per call)"
	return serveCmd(args[1:], stdio)
}
