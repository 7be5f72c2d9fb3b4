//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"golang.org/x/sys/unix"
)

// A danger-full-access call (LaunchDirect) of the unprivileged server is
// not launched inside the server's user namespace, where the host's root
// is not mapped (setuid-root programs such as sudo, and file capabilities,
// would not take effect, and root's files would show as uid 65534), but by
// the outer sbx serve, in the user's own namespace, as sbx run launches it.
// The inner server sends each such call on the control socket it got at
// start-up (ServeDirect): the command's stdio and a socket of the call's
// own, on which it then sends the call (directRequest) and gets back the
// command's pid, then its exit (directReply). The call's socket is the
// command's lifeline: the inner server's death closes it, and the outer
// kills the command then, as the parent-death signal of sbx run's command
// would.

// directCtl is the inner server's end of the control socket (nil outside
// the server's user namespace).
var directCtl *os.File

// directRequest is a direct launch, on the call's socket.
type directRequest struct {
	Path     string
	Argv     []string
	Dir      string
	Env      []string
	Terminal bool `json:",omitempty"`
}

// directReply is the outer's answer on the call's socket: first the pid
// (or the exec's errno), then the command's exit.
type directReply struct {
	Pid    int            `json:",omitempty"`
	Errno  syscall.Errno  `json:",omitempty"`
	Err    string         `json:",omitempty"`
	Exited bool           `json:",omitempty"`
	Status uint32         `json:",omitempty"`
	Rusage syscall.Rusage `json:",omitempty"`
}

// launchesOutside reports whether Start sends p to the outer sbx serve: a
// direct launch inside the server's user namespace, with no call cgroup
// (whose fd the outer would need; it then launches where it is).
func launchesOutside(p *Plan) bool {
	return directCtl != nil && p.Launch == LaunchDirect && p.Cgroup == nil
}

// startOutside has the outer sbx serve launch spec (see directCtl).
func startOutside(spec enforce.Command) (*Process, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("direct launch: socketpair: %w", err)
	}
	call := os.NewFile(uintptr(pair[0]), "direct-call")
	rights := unix.UnixRights(int(spec.Stdin.Fd()), int(spec.Stdout.Fd()), int(spec.Stderr.Fd()), pair[1])
	err = unix.Sendmsg(int(directCtl.Fd()), []byte{1}, rights, nil, 0)
	unix.Close(pair[1])
	if err != nil {
		call.Close()
		return nil, fmt.Errorf("direct launch: send to the outer sbx serve: %w", err)
	}
	if err := json.NewEncoder(call).Encode(directRequest{Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env, Terminal: spec.Terminal}); err != nil {
		call.Close()
		return nil, fmt.Errorf("direct launch: send the call: %w", err)
	}
	dec := json.NewDecoder(call)
	var started directReply
	if err := dec.Decode(&started); err != nil {
		call.Close()
		return nil, fmt.Errorf("direct launch: the outer sbx serve's answer: %w", err)
	}
	switch {
	case started.Errno != 0:
		call.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrStart, spec.Argv[0], started.Errno)
	case started.Err != "" || started.Pid <= 0:
		call.Close()
		return nil, fmt.Errorf("%w: %s: %s", ErrStart, spec.Argv[0], started.Err)
	}
	pr := &Process{Pid: started.Pid, done: newExitBox()}
	go func() {
		defer call.Close()
		var end directReply
		if err := dec.Decode(&end); err != nil || !end.Exited {
			pr.done.put(exitResult{err: fmt.Errorf("direct launch: the command's exit from the outer sbx serve: %w", err)})
			return
		}
		pr.done.put(exitResult{status: syscall.WaitStatus(end.Status), rusage: end.Rusage})
	}()
	return pr, nil
}

// ServeDirect is the outer sbx serve's side: it launches the direct calls
// the inner server sends on ctl until ctl ends (the inner server is gone).
// It first marks every fd above stderr close-on-exec (the inner server
// has inherited what it needed), so that none reaches a command, and makes
// itself not dumpable.
func ServeDirect(ctl *os.File) {
	markInheritedCloexec()
	// Its environment holds what the inner server strips from commands'
	// (as sbx run's does): not dumpable, its /proc files are root's. The
	// inner server's uid map is written already.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		var b [1]byte
		n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), b[:], oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		fds := receivedFDs(oob[:oobn])
		if len(fds) != 4 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		go launchDirect(fds)
	}
}

func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// directCalls are the commands the outer sbx serve launched and has not
// reaped: each leads a session of its own, whose group is killed when the
// inner server lets go of the call (its socket ends) or the outer ends
// (EndDirect). Their pids stay theirs until reaped, so a kill never hits
// another process.
type directCalls struct {
	mu    sync.Mutex
	pids  map[int]bool
	ended bool
}

var running = directCalls{pids: map[int]bool{}}

// add registers a started command; after EndDirect it is killed at once.
func (d *directCalls) add(pid int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pids[pid] = true
	if d.ended {
		killGroup(pid)
	}
}

// kill kills pid's group, unless it exited already.
func (d *directCalls) kill(pid int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pids[pid] {
		killGroup(pid)
	}
}

// exited: pid has ended (not reaped yet); no kill may reach its pid now.
func (d *directCalls) exited(pid int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pids, pid)
}

// killGroup kills pid and its process group (it leads a session): what the
// inner server would have killed when its call ended.
func killGroup(pid int) {
	unix.Kill(-pid, unix.SIGKILL)
	unix.Kill(pid, unix.SIGKILL)
}

// EndDirect kills every direct call still running: the outer sbx serve is
// about to exit because the inner server is gone. The watchers of the
// calls' sockets would kill them too, but may not run before the process
// exits, and a command's parent-death signal reaches only the command, not
// what it started.
func EndDirect() {
	running.mu.Lock()
	defer running.mu.Unlock()
	running.ended = true
	for pid := range running.pids {
		killGroup(pid)
	}
}

// launchDirect runs one direct call: fds are the command's stdin, stdout
// and stderr and the call's socket. It forks from a locked thread that
// lives until the command is reaped (its parent-death signal), and kills
// the command if the call's socket ends first (the inner server died).
func launchDirect(fds []int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	call := os.NewFile(uintptr(fds[3]), "direct-call")
	defer call.Close()
	dec, enc := json.NewDecoder(call), json.NewEncoder(call)
	var req directRequest
	err := dec.Decode(&req)
	if err == nil && len(req.Argv) == 0 {
		err = errors.New("no argv")
	}
	pid := 0
	if err == nil {
		pid, err = syscall.ForkExec(req.Path, req.Argv, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env,
			Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
			Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: req.Terminal, Pdeathsig: syscall.SIGKILL}})
	} else {
		err = fmt.Errorf("bad direct launch request: %w", err)
	}
	for _, fd := range fds[:3] {
		unix.Close(fd)
	}
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			enc.Encode(directReply{Err: err.Error()})
			return
		}
		enc.Encode(directReply{Errno: errno})
		return
	}
	running.add(pid)
	go func() {
		// The call's socket ends: the inner server is gone, or done with
		// the call. Until the command is marked exited it is not reaped,
		// so its pid is still its own.
		var b [1]byte
		for {
			if _, err := call.Read(b[:]); err != nil {
				break
			}
		}
		running.kill(pid)
	}()
	enc.Encode(directReply{Pid: pid})
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	running.exited(pid)
	r := wait(pid)
	enc.Encode(directReply{Exited: true, Status: uint32(r.status), Rusage: r.rusage})
}
