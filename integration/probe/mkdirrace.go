//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mkdirRace makes the directory name in dir up to n times with mkdir,
// from a path buffer another thread flips between dir/decoy and dir/name:
// what a supervisor that checks the path it read, and lets the kernel read
// it again, lets through. Once name exists it writes name/hooks/pre-commit
// in it (what a command would plant) and stops. OK says name was made.
func mkdirRace(dir, name string, n int) result {
	op := "mkdir-race"
	decoy := filepath.Join(dir, "decoy")
	target := filepath.Join(dir, name)
	var bufs [2][]byte
	for i, p := range []string{decoy, target} {
		bufs[i] = append([]byte(p), 0)
	}
	size := max(len(bufs[0]), len(bufs[1]))
	buf := make([]byte, size)
	copy(buf, bufs[0])
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			copy(buf, bufs[i%2])
		}
	}()
	made, refused := -1, map[string]int{}
	cwd := unix.AT_FDCWD // the paths are absolute
	for i := range n {
		_, _, e := unix.Syscall(unix.SYS_MKDIRAT, uintptr(cwd), uintptr(unsafe.Pointer(&buf[0])), 0o755)
		if e != 0 {
			refused[errnoName(int(e))]++
			continue
		}
		// Made: the decoy, or the target if there is no decoy (a
		// placeholder in its place exists and is not made: EEXIST).
		if unix.Rmdir(decoy) != nil {
			made = i
			break
		}
	}
	stop.Store(true)
	<-done
	if made < 0 {
		return result{Op: op, OK: false, Errno: "", Detail: fmt.Sprintf("%s not made in %d tries, refused %v", target, n, refused)}
	}
	// The supervisor refuses writes below an existing carve-out too, best
	// effort: planting may fail, the name is made either way.
	planted := "planted " + filepath.Join(target, "hooks", "pre-commit")
	if err := plant(target); err != nil {
		planted = "not planted: " + err.Error()
	}
	return result{Op: op, OK: true, Detail: fmt.Sprintf("%s made after %d tries (refused %v), %s", target, made+1, refused, planted)}
}

func plant(target string) error {
	hooks := filepath.Join(target, "hooks")
	if err := unix.Mkdir(hooks, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", hooks, err)
	}
	hook := filepath.Join(hooks, "pre-commit")
	fd, err := unix.Open(hook, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o755)
	if err != nil {
		return fmt.Errorf("create %s: %w", hook, err)
	}
	unix.Write(fd, []byte("#!/bin/sh\necho planted\n"))
	return unix.Close(fd)
}
