//go:build linux

package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// How an sbx server tells that a process talking to it belongs to an sbx
// call, of this sbx or any other (DESIGN.md, invariant 6), from what the
// kernel says about the peer, never from its uid or a path.
//
// Every call that has a sandbox runs in a PID namespace of its own whose
// init is sbx's: the thread launch's init program (enforce/linux/pidinit.go), or the
// unprivileged launch's stage (stageInit). Each names itself CallInitName
// (prctl PR_SET_NAME) before anything of the call runs. Only a task can
// change its own name: a write to /proc/PID/comm of another thread group
// is refused (EINVAL), ptrace and process_vm_writev are refused by the
// call's seccomp filter, and init ignores the signals of its namespace. A
// process cannot leave its PID namespace (setns is refused; a namespace
// it makes itself sits below), and an orphan of the call is reparented
// inside it, to that init or to a subreaper below it. So the mark cannot
// be shed: the peer is a call when its PID namespace, or one above it, has
// an init named CallInitName (callAncestry). A command can name itself
// CallInitName too; that only gets itself refused.
//
// IMPORTANT: the stage's name is as safe as its memory: code the command
// wrote into the stage could rename it. /proc/1/mem is out of the
// command's reach because Landlock refuses opening it for writing (no
// writable root covers /proc) and ptrace is refused; making the stage
// non-dumpable before it forks the command (issue 27 §3) closes it for
// good.
//
// A connect the seccomp supervisor carries out for a call (unixconnect.go)
// comes from sbx's own process, outside the call: the supervisor first
// binds the task's socket to an abstract address CallSocketPrefix+random,
// which the server reads back with getpeername (markCallSocket).

// CallInitName is the name (comm) of every call's PID namespace init.
const CallInitName = "sbx-init"

// CallSocketPrefix starts the abstract address (after its NUL) the
// supervisor binds a call's unix socket to before it connects it.
const CallSocketPrefix = "sbx-call/"

// NameCallInit names the calling thread CallInitName: the unprivileged
// stage, PID 1 of its call, calls it on its main thread (whose name is the
// process's in /proc/PID/status) before it forks the command.
func NameCallInit() error {
	name := []byte(CallInitName + "\x00")
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NAME, %s): %w", CallInitName, err)
	}
	return nil
}

// maxAncestry bounds the walk up a peer's ancestors (pid_max is 2^22, but
// no real process tree is this deep).
const maxAncestry = 4096

// CallPeer reports why the peer of the connected unix socket fd is an sbx
// call, or "" when it is none. An error means sbx could not tell (the peer
// ended before it was checked, /proc was unreadable): the caller refuses
// it, as it would a call.
//
// IMPORTANT: a peer whose pid the server cannot see (SO_PEERCRED gives 0:
// a process in a PID namespace that is not below the server's, such as
// another container or pod) is no call for this check: a call of an sbx
// running in another container, reaching the socket directly (the network
// on, or Landlock ABI 9), is not recognised. One through its supervisor
// is (the abstract mark).
//
// IMPORTANT: a call without a PID namespace (an unprivileged caller where
// user namespaces are refused; root on arm64, which has no init program
// yet: both report pidns) carries no init to find. Its connects that the
// supervisor carries out are marked all the same; one it makes itself
// (the network on, Landlock ABI 9, the supervisor off) looks like any
// process of the server's uid, and is served.
//
// IMPORTANT: before Linux 6.5 (no SO_PEERPIDFD) the peer's pid is not
// pinned: a peer that exits after its connect and whose pid is reused
// before the check (a full wrap of pid_max) would be judged by the new
// process.
func CallPeer(fd int) (string, error) {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return "", fmt.Errorf("getpeername: %w", err)
	}
	if u, ok := sa.(*unix.SockaddrUnix); ok && strings.HasPrefix(u.Name, "@"+CallSocketPrefix) {
		return fmt.Sprintf("connected by an sbx supervisor for a sandboxed call (its socket is bound to %q)", u.Name), nil
	}
	pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	switch {
	case errors.Is(err, unix.ENOPROTOOPT):
		pidfd = -1 // before Linux 6.5: see above
	case err != nil:
		return "", fmt.Errorf("getsockopt SO_PEERPIDFD: %w (the peer ended)", err)
	default:
		defer unix.Close(pidfd)
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return "", fmt.Errorf("getsockopt SO_PEERCRED: %w", err)
	}
	pid := int(cred.Pid)
	if pid == 0 {
		return "", nil // another PID namespace: see above
	}
	// SO_PEERCRED's pid is of the server's PID namespace, /proc's of the
	// one it was mounted in: they must be the same, or every pid read
	// there names another process.
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return "", fmt.Errorf("/proc is not of the server's PID namespace (/proc/self is %q, the server is pid %d: %v)", self, os.Getpid(), err)
	}
	if pid == os.Getpid() {
		// Only the server's own supervisor connects from the server's
		// process: for one of its calls.
		return "connected by this server's own supervisor for one of its calls", nil
	}
	reason, err := callAncestry(pid)
	// Signal 0 checks permission too: EPERM (a peer of another uid, root
	// for a server in its user namespace) says it is alive.
	if pidfd >= 0 && errors.Is(unix.PidfdSendSignal(pidfd, 0, nil, 0), unix.ESRCH) {
		// The pid read in /proc may have been another process's by now.
		return "", fmt.Errorf("peer pid %d ended before it was checked", pid)
	}
	return reason, err
}

// procEntry is what /proc/PID/status says of a process.
type procEntry struct {
	pid, ppid int
	name      string
	nspid     []int // its pid in each PID namespace, from /proc's down to its own
}

// isCallInit: the init of a PID namespace, named CallInitName.
func (p procEntry) isCallInit() bool {
	return p.name == CallInitName && p.nspid[len(p.nspid)-1] == 1
}

func readProcEntry(pid int) (procEntry, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procEntry{}, err
	}
	p := procEntry{pid: pid, ppid: -1}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":\t")
		switch k {
		case "Name":
			p.name = v
		case "PPid":
			p.ppid, err = strconv.Atoi(v)
		case "NSpid":
			for f := range strings.FieldsSeq(v) {
				n, e := strconv.Atoi(f)
				if e != nil {
					err = e
				}
				p.nspid = append(p.nspid, n)
			}
		}
		if err != nil {
			return procEntry{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
	}
	if p.ppid < 0 || len(p.nspid) == 0 {
		return procEntry{}, fmt.Errorf("/proc/%d/status: no PPid or NSpid", pid)
	}
	return p, nil
}

// callAncestry walks from pid up to the top of the server's PID namespace
// and returns why pid belongs to an sbx call: an ancestor (or pid itself)
// is a call's init; or a process on the way entered a PID namespace its
// parent is not in without being its init (the thread launch forks the
// command beside init, from sbx's thread outside the namespace), and its
// parent has a call's init as a child in a namespace as deep (callInitChild).
func callAncestry(pid int) (string, error) {
	cur, err := readProcEntry(pid)
	if err != nil {
		return "", fmt.Errorf("peer pid %d: %w", pid, err)
	}
	for range maxAncestry {
		if cur.isCallInit() {
			return fmt.Sprintf("pid %d is in the PID namespace of an sbx call (its init is pid %d, %s)", pid, cur.pid, CallInitName), nil
		}
		if cur.ppid == 0 {
			return "", nil // the top: the server's PID namespace's init
		}
		parent, err := readProcEntry(cur.ppid)
		if err != nil {
			return "", fmt.Errorf("peer pid %d: ancestor %d: %w", pid, cur.ppid, err)
		}
		if len(parent.nspid) < len(cur.nspid) && cur.nspid[len(cur.nspid)-1] != 1 {
			init, err := callInitChild(parent.pid, len(cur.nspid))
			if err != nil {
				return "", fmt.Errorf("peer pid %d: %w", pid, err)
			}
			if init > 0 {
				return fmt.Sprintf("pid %d is in the PID namespace of an sbx call (pid %d entered it from pid %d, whose child pid %d is its init, %s)",
					pid, cur.pid, parent.pid, init, CallInitName), nil
			}
		}
		cur = parent
	}
	return "", fmt.Errorf("peer pid %d: more than %d ancestors", pid, maxAncestry)
}

// callInitChild returns a child of ppid that is a call's init in a PID
// namespace depth levels below /proc's, or 0. The children come from
// /proc/PID/task/*/children, or without it (CONFIG_PROC_CHILDREN) from a
// scan of /proc.
func callInitChild(ppid, depth int) (int, error) {
	kids, err := childrenOf(ppid)
	if err != nil {
		return 0, err
	}
	for _, k := range kids {
		p, err := readProcEntry(k)
		if err != nil {
			continue // gone: an init that ended took its namespace with it
		}
		if p.ppid == ppid && len(p.nspid) == depth && p.isCallInit() {
			return k, nil
		}
	}
	return 0, nil
}

func childrenOf(ppid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", ppid))
	if err != nil {
		return nil, fmt.Errorf("the threads of pid %d: %w", ppid, err)
	}
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", ppid, t.Name()))
		if errors.Is(err, os.ErrNotExist) && t.Name() == strconv.Itoa(ppid) {
			return scanChildren(ppid)
		}
		if err != nil {
			continue // a thread that ended
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids, nil
}

// scanChildren finds the children of ppid by reading every process's
// status: for kernels without CONFIG_PROC_CHILDREN.
func scanChildren(ppid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProcEntry(n); err == nil && p.ppid == ppid {
			kids = append(kids, n)
		}
	}
	return kids, nil
}

// markCallSocket binds the task's stream or seqpacket unix socket t to a
// fresh abstract address CallSocketPrefix+random before the supervisor
// connects it for the task, so that an sbx server it reaches tells it is a
// call's (CallPeer): the server sees sbx's process as the peer, not the
// command. It returns the outcome that ends the connect instead: a socket
// the task bound to an address of its own is refused (EACCES, a denial
// with no retry), since the server would not see the mark. A bind cannot
// be undone, so a task cannot shed the mark once set; a socket the
// supervisor marked in an earlier attempt (EINTR, EINPROGRESS) keeps it.
func (s *Supervisor) markCallSocket(c call, t *taskSocket, si *socketInode) *outcome {
	if t.domain != unix.AF_UNIX || (t.sotype != unix.SOCK_STREAM && t.sotype != unix.SOCK_SEQPACKET) {
		return nil // a datagram socket reaches no listening server
	}
	name, err := boundName(t.sock)
	if err != nil {
		d := s.blind(c, "connect", si.path, "getsockname: "+err.Error())
		return &outcome{errno: d.errno, denials: d.denials}
	}
	if name != "" {
		if strings.HasPrefix(name, "\x00"+CallSocketPrefix) {
			return nil
		}
		return s.callSocketBound(c, si)
	}
	var b [12]byte
	rand.Read(b[:])
	err = unix.Bind(t.sock, &unix.SockaddrUnix{Name: "@" + CallSocketPrefix + hex.EncodeToString(b[:])})
	if errors.Is(err, unix.EINVAL) {
		return s.callSocketBound(c, si) // another thread of the task bound it meanwhile
	}
	if err != nil {
		d := s.blind(c, "connect", si.path, "binding the call's mark: "+err.Error())
		return &outcome{errno: d.errno, denials: d.denials}
	}
	return nil
}

func (s *Supervisor) callSocketBound(c call, si *socketInode) *outcome {
	d := s.refuse(unix.EACCES, report.Denial{Operation: "connect", Path: si.path, Syscall: c.name, PID: c.tid,
		Address: &report.Address{Family: "unix", Address: si.path}, Reason: report.ReasonCallSocketBound})
	return &outcome{errno: d.errno, denials: d.denials}
}

// boundName is the address a unix socket is bound to, as raw bytes (an
// abstract one starts with NUL), or "" when it is not bound: package
// unix's Getsockname shows an unbound socket and one bound to the empty
// abstract name alike.
func boundName(fd int) (string, error) {
	var sa unix.RawSockaddrUnix
	n := uint32(unsafe.Sizeof(sa))
	_, _, errno := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return "", errno
	}
	if n <= 2 {
		return "", nil
	}
	b := make([]byte, min(int(n)-2, len(sa.Path)))
	for i := range b {
		b[i] = byte(sa.Path[i])
	}
	return string(b), nil
}

// controlPlaneDenial reports a connect the supervisor made for the task on
// sock (to path) that reached an sbx server, which refuses the call
// (CallPeer) with a JSON-RPC error: the supervisor only reports it, on the
// evidence of that refusal, read with MSG_PEEK (the task still reads it).
// Only a listener whose process was started as "sbx serve" (or as the
// unprivileged server's re-execution in its user namespace, "sbx
// __serve-userns": its /proc/PID/cmdline, world-readable) is waited for,
// up to refusalWait: every other server may well wait for its client to speak
// first. A server that sbx cannot see (another PID namespace) refuses the
// call all the same, without this denial.
func (s *Supervisor) controlPlaneDenial(c call, sock int, path string) []report.Denial {
	cred, err := unix.GetsockoptUcred(sock, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cred.Pid))
	if err != nil {
		return nil
	}
	argv := strings.Split(string(b), "\x00")
	if len(argv) < 2 || (argv[1] != "serve" && argv[1] != "__serve-userns") {
		return nil
	}
	fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}}
	deadline := time.Now().Add(refusalWait)
	for {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
		if errors.Is(err, unix.EINTR) && time.Now().Before(deadline) {
			continue
		}
		if err != nil || n == 0 {
			return nil
		}
		break
	}
	buf := make([]byte, len(refusalLine)+64)
	n, _, err := unix.Recvfrom(sock, buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if err != nil || !strings.Contains(string(buf[:max(n, 0)]), refusalLine) {
		return nil
	}
	return []report.Denial{{Operation: "connect", Path: path, Syscall: c.name, PID: c.tid, Source: SupervisorSource,
		Confidence: Observed, Count: 1, Address: &report.Address{Family: "unix", Address: path}, Reason: report.ReasonControlPlane}}
}

// refusalLine is what an sbx server's refusal of a call starts its error
// message with (serve/listen_linux.go: refusePeer, errCallPeer).
const refusalLine = `"message":"connection refused: a sandboxed call never reaches an sbx server`

// refusalWait bounds the wait for an sbx server's refusal: it checks a
// connect the supervisor marked first, from the socket's address alone.
const refusalWait = time.Second
