//go:build linux

package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawUnixAddr is a struct sockaddr_un in memory another thread may rewrite.
type rawUnixAddr struct {
	family uint16
	path   [108]byte
}

func (a *rawUnixAddr) set(p string) {
	a.family = unix.AF_UNIX
	var b [108]byte
	copy(b[:], p)
	a.path = b
}

func rawConnect(fd int, a *rawUnixAddr) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a))
	return e
}

// unixRace serves a stream socket at inside and connects to it n times
// while another thread flips the sockaddr between inside and outside: what
// a supervisor that let the kernel re-read the address would let through to
// outside.
func unixRace(inside, outside string, n int) result {
	op := "unix-race"
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: inside}); err != nil {
		return failErr(op, err, "bind "+inside)
	}
	if err := unix.Listen(ln, 128); err != nil {
		return failErr(op, err, "listen")
	}
	go func() {
		for {
			c, _, err := unix.Accept(ln)
			if err != nil {
				return
			}
			unix.Close(c)
		}
	}()
	var addr rawUnixAddr
	addr.set(inside)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				addr.set(outside)
			} else {
				addr.set(inside)
			}
		}
	}()
	ok, refused := 0, map[string]int{}
	for range n {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			stop.Store(true)
			return failErr(op, err, "socket")
		}
		if e := rawConnect(fd, &addr); e == 0 {
			ok++
		} else {
			refused[errnoName(int(e))]++
		}
		unix.Close(fd)
	}
	stop.Store(true)
	<-done
	return result{Op: op, OK: true, Detail: fmt.Sprintf("connected %d, refused %v", ok, refused)}
}

// unixConnectNonblock connects a non-blocking stream socket to path.
func unixConnectNonblock(path string) result {
	op := "unix-connect-nonblock"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "connect "+path)
	}
	return result{Op: op, OK: true, Detail: "connected " + path}
}

// unixSendto sends one datagram to path from an unconnected socket.
func unixSendto(path string) result {
	op := "unix-sendto"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, []byte("dgram"), 0, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "sendto "+path)
	}
	return result{Op: op, OK: true, Detail: "sent to " + path}
}

// unixDgramServe binds a datagram socket at path, sends itself a datagram
// with sendto and with sendmsg, and reads them back.
func unixDgramServe(path string) result {
	op := "unix-dgram-serve"
	srv, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(srv)
	if err := unix.Bind(srv, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "bind "+path)
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(c)
	if err := unix.Sendto(c, []byte("one"), 0, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "sendto "+path)
	}
	if err := unix.Sendmsg(c, []byte("two"), nil, &unix.SockaddrUnix{Name: path}, 0); err != nil {
		return failErr(op, err, "sendmsg "+path)
	}
	buf := make([]byte, 16)
	var got []string
	for range 2 {
		n, _, err := unix.Recvfrom(srv, buf, 0)
		if err != nil {
			return failErr(op, err, "recvfrom")
		}
		got = append(got, string(buf[:n]))
	}
	return result{Op: op, OK: true, Detail: fmt.Sprintf("received %q", got)}
}
