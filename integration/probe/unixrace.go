//go:build linux

package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
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

// unixSendmsgDontroute sends one datagram to path with sendmsg and
// MSG_DONTROUTE, the flag the filter once exempted.
func unixSendmsgDontroute(path string) result {
	op := "unix-sendmsg-dontroute"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(fd, []byte("dontroute"), nil, &unix.SockaddrUnix{Name: path}, unix.MSG_DONTROUTE); err != nil {
		return failErr(op, err, "sendmsg "+path)
	}
	return result{Op: op, OK: true, Detail: "sent to " + path}
}

// mmsghdr mirrors struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   uint32
}

// unixSendmmsg sends two datagrams to path with one sendmmsg.
func unixSendmmsg(path string) result {
	op := "unix-sendmmsg"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	var addr rawUnixAddr
	addr.set(path)
	data := [][]byte{[]byte("mmsg-one"), []byte("mmsg-two")}
	var iov [2]unix.Iovec
	var msgs [2]mmsghdr
	for i := range msgs {
		iov[i].Base = &data[i][0]
		iov[i].SetLen(len(data[i]))
		msgs[i].hdr.Name = (*byte)(unsafe.Pointer(&addr))
		msgs[i].hdr.Namelen = uint32(unsafe.Sizeof(addr))
		msgs[i].hdr.Iov = &iov[i]
		msgs[i].hdr.SetIovlen(1)
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
	runtime.KeepAlive(data)
	if e != 0 {
		return failErr(op, e, "sendmmsg "+path)
	}
	return result{Op: op, OK: true, Detail: fmt.Sprintf("sent %d (lens %d %d) to %s", n, msgs[0].len, msgs[1].len, path)}
}

// unixSendmsgRace sends n datagrams with sendmsg on an unconnected
// socket whose msghdr has no destination, while another thread flips
// msg_name between none and outside: what a supervisor that let a sendmsg
// without a destination continue would let through.
func unixSendmsgRace(outside string, n int) result {
	op := "unix-sendmsg-race"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	var addr rawUnixAddr
	addr.set(outside)
	data := []byte("race")
	iov := unix.Iovec{Base: &data[0]}
	iov.SetLen(len(data))
	var h unix.Msghdr
	h.Iov = &iov
	h.SetIovlen(1)
	var stop atomic.Bool
	done := make(chan struct{})
	name := (*byte)(unsafe.Pointer(&addr))
	go func() {
		runtime.LockOSThread()
		defer close(done)
		p := (*[2]uint64)(unsafe.Pointer(&h))
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				atomic.StoreUint64(&p[0], uint64(uintptr(unsafe.Pointer(name))))
				atomic.StoreUint64(&p[1], uint64(unsafe.Sizeof(addr)))
			} else {
				atomic.StoreUint64(&p[1], 0)
				atomic.StoreUint64(&p[0], 0)
			}
		}
	}()
	sent, refused := 0, map[string]int{}
	for range n {
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&h)), 0)
		if e == 0 {
			sent++
		} else {
			refused[errnoName(int(e))]++
		}
	}
	stop.Store(true)
	<-done
	runtime.KeepAlive(&addr)
	runtime.KeepAlive(data)
	return result{Op: op, OK: true, Detail: fmt.Sprintf("sent %d, refused %v", sent, refused)}
}

// sendmsgLoop times n sendmsg of 64 bytes on a connected AF_UNIX
// socketpair (a reader drains the other end): the cost of supervising
// every sendmsg.
func sendmsgLoop(n int) result {
	op := "sendmsg-loop"
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socketpair")
	}
	defer unix.Close(fds[0])
	go func() {
		buf := make([]byte, 1<<16)
		for {
			if k, err := unix.Read(fds[1], buf); err != nil || k == 0 {
				return
			}
		}
	}()
	msg := make([]byte, 64)
	start := time.Now()
	for range n {
		if err := unix.Sendmsg(fds[0], msg, nil, nil, 0); err != nil {
			return failErr(op, err, "sendmsg")
		}
	}
	el := time.Since(start)
	return result{Op: op, OK: true, Detail: fmt.Sprintf("%d sendmsg in %v: %.1f µs each", n, el, float64(el.Microseconds())/float64(n))}
}
