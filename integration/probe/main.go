//go:build linux

// Command probe attempts one action inside the sandbox and prints what the
// kernel answered as a single JSON line:
//
//	{"op":"write","ok":false,"errno":"EACCES","detail":"open /etc/x"}
//
// It exits 0 whatever the outcome, so the caller reads the verdict from the
// JSON; it exits 2 only when it is misused (unknown action, bad arguments).
// Every action goes through raw syscalls so the errno is the kernel's own,
// not a Go wrapper's interpretation. It must build with CGO_ENABLED=0: the
// integration tests run the same static binary as root and as other users.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const usage = `usage: probe ACTION [ARG...]
  write PATH | create PATH | mkdir PATH | read PATH | truncate PATH
  link OLD NEW | symlink TARGET NEW | rename OLD NEW
  connect tcp4|tcp6|udp4|udp6|mptcp4|mptcp6 HOST:PORT
  socket vsock|packet|inet|inet6|unix|netlink
  listen-and-connect tcp4|tcp6 [PORT]   (PORT 0 or none: any free port)
  abstract-connect NAME   (connect to the abstract unix socket @NAME)
  unix-connect PATH | unix-serve PATH   (pathname unix sockets)
  sbx-escape SOCKET OUT | sbx-escape-bound SOCKET OUT
                                        (as an sbx server's client: a danger-full-access exec writing OUT)
  unix-connect-nonblock PATH | unix-sendto PATH | unix-dgram-serve PATH
  unix-race INSIDE OUTSIDE N            (connects while a thread flips the sockaddr)
  mkdir-race DIR NAME N                 (mkdir while a thread flips DIR/decoy and DIR/NAME)
  unix-sendmsg-dontroute PATH | unix-sendmmsg PATH
  sendmsg-loop N                        (times N sendmsg on a connected socketpair)
  unix-sendmsg-race OUTSIDE N           (sendmsg while a thread flips msg_name between none and OUTSIDE)
  sendto udp4|udp6 HOST:PORT            (one datagram, unconnected socket)
  tiocsti | ptrace-parent | int80 | x32 | fd N | signal PID
  mount-proc                            (a new procfs on /proc: run it in new mount and PID namespaces)
  setxattr-cap PATH | setxattr-acl PATH | chattr PATH | scan-environ NEEDLE
  sethostname | setdomainname | clock-settime | syslog | capeff   (what capabilities allow)
  chmod PATH MODE | secret-chmod PATH MODE | secret-mkdir PATH
  unreadable-chmod PATH MODE            (the path in a PROT_NONE page)
  memfd-secret                          (does the kernel have it)
  tmpfile-link empty|proc DIR NEW       (O_TMPFILE in DIR, then linkat)
  chroot-then plain|userns chmod|chown|mkdir DIR NAME JAIL
  forge-status exit|exec-failed|kill-init [FILE]   (writes the stage's status pipe: see forge.go;
                                         exits 3, exec-failed 0)
` + setidUsage + `
  curl [FLAGS] URL...                   (curl's subset the network tests use: see curl.go;
                                         curl's output and exit status, not a JSON line)`

// result is the one JSON line the probe prints.
type result struct {
	Op     string `json:"op"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "curl" {
		os.Exit(curlMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "forge-status" {
		os.Exit(forgeMain(os.Args[2:]))
	}
	r, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.Encode(r)
}

func run(args []string) (result, error) {
	if len(args) == 0 {
		return result{}, errors.New("missing action")
	}
	op, args := args[0], args[1:]
	need := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d", op, n, len(args))
		}
		return nil
	}
	switch op {
	case "write", "create", "mkdir", "read", "truncate":
		if err := need(1); err != nil {
			return result{}, err
		}
		return fileOp(op, args[0]), nil
	case "link", "symlink", "rename":
		if err := need(2); err != nil {
			return result{}, err
		}
		return linkOp(op, args[0], args[1]), nil
	case "connect":
		if err := need(2); err != nil {
			return result{}, err
		}
		return connect(args[0], args[1])
	case "socket":
		if err := need(1); err != nil {
			return result{}, err
		}
		return socketOp(args[0])
	case "listen-and-connect":
		if len(args) == 2 {
			port, err := strconv.ParseUint(args[1], 10, 16)
			if err != nil {
				return result{}, fmt.Errorf("listen-and-connect: port %q: %w", args[1], err)
			}
			return listenAndConnect(args[0], int(port))
		}
		if err := need(1); err != nil {
			return result{}, err
		}
		return listenAndConnect(args[0], 0)
	case "abstract-connect":
		if err := need(1); err != nil {
			return result{}, err
		}
		return abstractConnect(args[0]), nil
	case "sbx-escape", "sbx-escape-bound":
		if err := need(2); err != nil {
			return result{}, err
		}
		return sbxEscape(args[0], args[1], op == "sbx-escape-bound"), nil
	case "unix-connect", "unix-serve":
		if err := need(1); err != nil {
			return result{}, err
		}
		return map[string]func(string) result{"unix-connect": unixConnect, "unix-serve": unixServe}[op](args[0]), nil
	case "unix-connect-nonblock", "unix-sendto", "unix-dgram-serve":
		if err := need(1); err != nil {
			return result{}, err
		}
		return map[string]func(string) result{"unix-connect-nonblock": unixConnectNonblock, "unix-sendto": unixSendto, "unix-dgram-serve": unixDgramServe}[op](args[0]), nil
	case "unix-sendmsg-dontroute", "unix-sendmmsg":
		if err := need(1); err != nil {
			return result{}, err
		}
		return map[string]func(string) result{"unix-sendmsg-dontroute": unixSendmsgDontroute, "unix-sendmmsg": unixSendmmsg}[op](args[0]), nil
	case "sendmsg-loop":
		if err := need(1); err != nil {
			return result{}, err
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return result{}, fmt.Errorf("sendmsg-loop: count: %w", err)
		}
		return sendmsgLoop(n), nil
	case "unix-sendmsg-race":
		if err := need(2); err != nil {
			return result{}, err
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return result{}, fmt.Errorf("unix-sendmsg-race: count: %w", err)
		}
		return unixSendmsgRace(args[0], n), nil
	case "unix-race":
		if err := need(3); err != nil {
			return result{}, err
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return result{}, fmt.Errorf("unix-race: count: %w", err)
		}
		return unixRace(args[0], args[1], n), nil
	case "mkdir-race":
		if err := need(3); err != nil {
			return result{}, err
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return result{}, fmt.Errorf("mkdir-race: count: %w", err)
		}
		return mkdirRace(args[0], args[1], n), nil
	case "sendto":
		if err := need(2); err != nil {
			return result{}, err
		}
		return sendTo(args[0], args[1])
	case "tiocsti", "ptrace-parent", "int80", "x32", "setns", "mount-proc":
		if err := need(0); err != nil {
			return result{}, err
		}
		return map[string]func() result{"tiocsti": tiocsti, "ptrace-parent": ptraceParent, "int80": int80, "x32": x32, "setns": setnsSelf, "mount-proc": mountProc}[op](), nil
	case "setxattr-cap", "setxattr-acl", "chattr", "scan-environ", "sethostname", "setdomainname", "clock-settime", "syslog", "capeff":
		return privOp(op, args)
	case "chmod", "secret-chmod", "unreadable-chmod":
		if err := need(2); err != nil {
			return result{}, err
		}
		mode, err := parseMode(args[1])
		if err != nil {
			return result{}, err
		}
		if op == "chmod" {
			return chmodOp(args[0], mode), nil
		}
		return hiddenPath(op[:len(op)-len("-chmod")], "chmod", args[0], mode), nil
	case "secret-mkdir":
		if err := need(1); err != nil {
			return result{}, err
		}
		return hiddenPath("secret", "mkdir", args[0], 0o755), nil
	case "memfd-secret":
		if err := need(0); err != nil {
			return result{}, err
		}
		fd, _, e := unix.Syscall(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 0, 0)
		if e != 0 {
			return fail(op, errnoName(int(e)), "memfd_secret"), nil
		}
		unix.Close(int(fd))
		return result{Op: op, OK: true, Detail: "memfd_secret"}, nil
	case "tmpfile-link":
		if err := need(3); err != nil {
			return result{}, err
		}
		return tmpfileLink(args[0], args[1], args[2]), nil
	case "chroot-then":
		if err := need(5); err != nil {
			return result{}, err
		}
		return chrootThen(args[0], args[1], args[2], args[3], args[4]), nil
	case "setid", "pidfd-getfd", "kcmp", "euid", "openat2", "statfs-nosuid":
		return setidAction(op, args, need)
	case "fd", "signal":
		if err := need(1); err != nil {
			return result{}, err
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return result{}, fmt.Errorf("%s: bad number %q", op, args[0])
		}
		if op == "signal" {
			return signalPID(n), nil
		}
		return fdWrite(n), nil
	}
	return result{}, fmt.Errorf("unknown action %q", op)
}

func errnoName(e int) string {
	if n := unix.ErrnoName(syscall.Errno(e)); n != "" {
		return n
	}
	return "errno" + strconv.Itoa(e)
}

func itoa(n int) string { return strconv.Itoa(n) }

// fail builds a negative result.
func fail(op, errno, detail string) result {
	return result{Op: op, Errno: errno, Detail: detail}
}

// failErr builds a negative result from a syscall error.
func failErr(op string, err error, step string) result {
	var e syscall.Errno
	if errors.As(err, &e) {
		return fail(op, errnoName(int(e)), step)
	}
	return fail(op, "", step+": "+err.Error())
}

func fileOp(op, path string) result {
	switch op {
	case "mkdir":
		if err := unix.Mkdir(path, 0o755); err != nil {
			return failErr(op, err, "mkdir "+path)
		}
		return result{Op: op, OK: true, Detail: "mkdir " + path}
	case "truncate":
		// truncate(2) on a path, without opening it for writing: what
		// Landlock ABI 3's LANDLOCK_ACCESS_FS_TRUNCATE restricts.
		if err := unix.Truncate(path, 0); err != nil {
			return failErr(op, err, "truncate "+path)
		}
		return result{Op: op, OK: true, Detail: "truncated " + path}
	case "read":
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return failErr(op, err, "open "+path)
		}
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return failErr(op, err, "read "+path)
		}
		return result{Op: op, OK: true, Detail: fmt.Sprintf("read %d bytes", n)}
	}
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC
	if op == "create" {
		flags |= unix.O_EXCL
	} else {
		flags |= unix.O_TRUNC
	}
	fd, err := unix.Open(path, flags, 0o644)
	if err != nil {
		return failErr(op, err, "open "+path)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("written by sbx probe\n")); err != nil {
		return failErr(op, err, "write "+path)
	}
	return result{Op: op, OK: true, Detail: "wrote " + path}
}

// linkOp makes a hard link or symlink NEW to OLD, or renames OLD to NEW.
func linkOp(op, old, new string) result {
	var err error
	switch op {
	case "link":
		err = unix.Link(old, new)
	case "symlink":
		err = unix.Symlink(old, new)
	case "rename":
		err = unix.Rename(old, new)
	}
	step := op + " " + old + " " + new
	if err != nil {
		return failErr(op, err, step)
	}
	return result{Op: op, OK: true, Detail: step}
}

// tiocsti pushes a byte into the input queue of the terminal on fd 0, once
// with TIOCSTI and once with
// TIOCSTI|1<<32: ioctl's request is an unsigned int, so the kernel ignores
// the high bits and a filter that compares 64 bits lets the second through.
// errno is the common errno of both, or "PLAIN/HIGH" when they differ.
//
// The kernel itself refuses TIOCSTI on a terminal that is not the caller's
// controlling terminal (EPERM) unless it has CAP_SYS_ADMIN, which would make
// an EPERM prove nothing. So the probe first makes fd 0 its controlling
// terminal (TIOCSCTTY; it leads its own session under sbx), as a command
// that inherits a terminal nobody controls can: then only a filter can
// explain an EPERM.
func tiocsti() result {
	fd, target := 0, "fd 0"
	ctty := "TIOCSCTTY=ok"
	if err := unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0); err != nil {
		ctty = "TIOCSCTTY=" + failErr("", err, "").Errno
	}
	c := byte('#')
	try := func(req uint64) syscall.Errno {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&c)))
		return e
	}
	plain, high := try(unix.TIOCSTI), try(unix.TIOCSTI|1<<32)
	name := func(e syscall.Errno) string {
		if e == 0 {
			return "ok"
		}
		return errnoName(int(e))
	}
	r := result{Op: "tiocsti", OK: plain == 0 || high == 0,
		Detail: fmt.Sprintf("%s: %s TIOCSTI=%s TIOCSTI|1<<32=%s", target, ctty, name(plain), name(high))}
	switch {
	case plain == high && plain != 0:
		r.Errno = name(plain)
	case plain != high:
		r.Errno = name(plain) + "/" + name(high)
	}
	return r
}

// ptraceParent attaches to the parent (sbx, or the shell that ran the
// probe) and, if that works, waits for the attach stop and detaches again
// with no signal, so the parent carries on unharmed.
func ptraceParent() result {
	ppid := unix.Getppid()
	if err := unix.PtraceAttach(ppid); err != nil {
		return failErr("ptrace-parent", err, "PTRACE_ATTACH "+itoa(ppid))
	}
	var ws unix.WaitStatus
	unix.Wait4(ppid, &ws, unix.WALL, nil)
	unix.PtraceDetach(ppid)
	return result{Op: "ptrace-parent", OK: true, Detail: "attached to " + itoa(ppid)}
}

// setnsSelf joins the network namespace the probe is already in: a no-op
// the kernel allows any holder of CAP_SYS_ADMIN, so a refusal for root is
// the filter's.
func setnsSelf() result {
	fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return failErr("setns", err, "open /proc/self/ns/net")
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return failErr("setns", err, "setns CLONE_NEWNET")
	}
	return result{Op: "setns", OK: true, Detail: "joined its own network namespace"}
}

// signalPID sends SIGCONT (harmless to a running process) to pid, a process
// outside the sandbox; Landlock's signal scope (ABI 6) refuses it.
func signalPID(pid int) result {
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		return failErr("signal", err, "kill "+itoa(pid)+" SIGCONT")
	}
	return result{Op: "signal", OK: true, Detail: "signalled " + itoa(pid)}
}

func fdWrite(n int) result {
	if _, err := unix.Write(n, []byte("written by sbx probe through an inherited fd\n")); err != nil {
		return failErr("fd", err, "write fd "+itoa(n))
	}
	return result{Op: "fd", OK: true, Detail: "wrote fd " + itoa(n)}
}

// mountProc mounts a new procfs on /proc, as sbx does for a call with its
// own PID namespace; the caller starts the probe in new mount and PID
// namespaces (and a user namespace where sbx would make one). Inside a user
// namespace the kernel refuses it (EPERM) when the /proc it would cover has
// paths hidden under other mounts (a container's masked paths).
func mountProc() result {
	const op = "mount-proc"
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return failErr(op, err, "make / private")
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return failErr(op, err, "mount proc /proc")
	}
	return result{Op: op, OK: true, Detail: "mounted a new procfs on /proc"}
}
