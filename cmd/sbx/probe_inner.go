//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeStageCommand is the hidden subcommand `sbx probe` runs inside the
// sandbox: it performs the probes of its spec and prints their raw outcomes.
const probeStageCommand = "__probe"

func init() {
	register(probeStageCommand, command{hidden: true, summary: "internal: probes inside the sandbox", run: probeStage})
}

// probeSpec is what the outer `sbx probe` asks the stage to try. Addresses
// are listeners the outer sbx holds open on the host.
type probeSpec struct {
	Paths      []string `json:"paths"`
	TCP        string   `json:"tcp"`
	UDP        string   `json:"udp"`
	Unix       []string `json:"unix"`
	Abstract   string   `json:"abstract"`
	OutsidePID int      `json:"outside_pid"`
}

// probeOutcome is one probe as the stage saw it: Err is "" when the
// operation succeeded, else the errno name (or the error text when the
// failure carries no errno).
type probeOutcome struct {
	Probe  string `json:"probe"`
	Target string `json:"target"`
	Err    string `json:"err"`
	Errno  bool   `json:"errno"`
}

func probeStage(args []string, stdio Stdio) int {
	var spec probeSpec
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &spec) != nil {
		fmt.Fprintln(stdio.Err, "sbx __probe: internal subcommand of sbx probe")
		return ExitRefused
	}
	var out []probeOutcome
	add := func(probe, target string, err error) { out = append(out, outcomeOf(probe, target, err)) }
	for _, p := range spec.Paths {
		probePath(p, add)
	}
	add("tcp-connect", spec.TCP, dialClose("tcp", spec.TCP))
	add("tcp-connect", "inside "+probeLoopback, tcpInside())
	add("udp-send", spec.UDP, udpSend(spec.UDP))
	for _, s := range spec.Unix {
		add("unix-connect", s, dialClose("unix", s))
	}
	add("unix-connect", spec.Abstract, dialClose("unix", spec.Abstract))
	add("signal", fmt.Sprintf("pid %d (outside)", spec.OutsidePID), signalZero(spec.OutsidePID))
	return writeJSON(stdio.Out, out)
}

func outcomeOf(probe, target string, err error) probeOutcome {
	o := probeOutcome{Probe: probe, Target: target}
	if err != nil {
		o.Err = err.Error()
		var en syscall.Errno
		if errors.As(err, &en) {
			o.Err, o.Errno = errnoName(en), true
		}
	}
	return o
}

// probeLoopback is the address the stage listens on and connects to inside
// its own network (the private loopback when the network is isolated).
const probeLoopback = "127.0.0.1:0"

// probePath reads, writes and creates at p. None of them changes anything
// that exists: the write opens an existing regular file O_WRONLY without
// O_TRUNC and writes nothing; the created file has a probe name and is
// removed at once.
func probePath(p string, add func(probe, target string, err error)) {
	fi, err := os.Stat(p)
	if err != nil {
		add("read", p, err)
		return
	}
	if !fi.IsDir() {
		add("read", p, readOne(p))
		add("write", p, openWrite(p))
		return
	}
	add("read", p, readOne(p))
	if f := firstRegularFile(p); f != "" {
		add("write", f, openWrite(f))
	}
	name := filepath.Join(p, probeFileName())
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
		err = os.Remove(name)
	}
	add("create", p, err)
}

// probeFileName is unique per stage so concurrent probes never meet.
func probeFileName() string { return fmt.Sprintf(".sbx-probe-%d", os.Getpid()) }

// firstRegularFile is the first regular file of dir by name, so the write
// probe of a directory opens the same file on every run.
func firstRegularFile(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

func readOne(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		_, err = f.ReadDir(1)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	}
	_, err = f.Read(make([]byte, 1))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

func openWrite(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func dialClose(network, addr string) error {
	s, err := dialSock(network, addr)
	s.close()
	return err
}

func tcpInside() error {
	l, err := listenSock("tcp", probeLoopback)
	if err != nil {
		return err
	}
	defer l.close()
	return dialClose("tcp", l.addr)
}

// udpSend sends the probe datagram; whether it arrived is for the outer sbx
// to say, since a send on an isolated loopback succeeds and goes nowhere.
func udpSend(addr string) error {
	s, err := dialSock("udp", addr)
	if err != nil {
		return err
	}
	defer s.close()
	_, err = unix.Write(s.fd, []byte(probeDatagram))
	return err
}

const probeDatagram = "sbx-probe"

func signalZero(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	err = p.Signal(syscall.Signal(0))
	if errors.Is(err, os.ErrProcessDone) {
		// os reports a pid it cannot find this way; the kernel said ESRCH.
		return syscall.ESRCH
	}
	return err
}

// probeErrnos names the errnos the probes can meet; others print as numbers.
var probeErrnos = map[syscall.Errno]string{
	syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.EROFS: "EROFS",
	syscall.ENOENT: "ENOENT", syscall.ESRCH: "ESRCH", syscall.ECONNREFUSED: "ECONNREFUSED",
	syscall.ENETUNREACH: "ENETUNREACH", syscall.EAFNOSUPPORT: "EAFNOSUPPORT",
	syscall.ETIMEDOUT: "ETIMEDOUT", syscall.EISDIR: "EISDIR", syscall.ETXTBSY: "ETXTBSY",
}

func errnoName(e syscall.Errno) string {
	if n, ok := probeErrnos[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}
