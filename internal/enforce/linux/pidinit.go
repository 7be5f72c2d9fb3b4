//go:build linux

package linux

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// The launcher thread has no process to spare as init of the command's PID
// namespace, and a second Go start would cost ~2 ms per call. So init is
// this 131-byte x86-64 program, loaded from a memfd:
//
//	      prctl(PR_SET_NAME, "sbx-init")  the mark by which sbx servers refuse the call (supervisor/callpeer.go)
//	loop: n = read(0, sp, 1)         fd 0 is a pipe whose write end only sbx holds
//	      if n == -EINTR: jmp loop
//	      if n != 1: exit(0)         end of file: sbx closed it or died
//	      r = mount("proc", "/proc", "proc", MS_NOSUID|MS_NODEV|MS_NOEXEC, 0)
//	      write(1, &r, 8)            fd 1 is a pipe sbx reads the answer from
//	      jmp loop
//
// The read returns 0 when sbx closes the pipe or dies (even of SIGKILL: the
// kernel closes its fds), and init's death kills every process in the
// namespace: that is how the whole tree dies with sbx. A parent-death signal
// alone proved unreliable here (about one SIGKILL of sbx in six left init
// running). As PID 1 it ignores every signal it has no handler for, so
// nothing in the sandbox can kill it early. It does not reap orphans: they
// stay zombies until the call ends, which bounds them by the call.
//
// A byte on the pipe asks init to mount a procfs on /proc: the launcher
// thread is not in the PID namespace it made (unshare moves only its
// children), and a procfs shows the PID namespace of the process that
// mounts it. So the command's /proc, which must show the call's processes
// and not the host's (their environments, sbx's own included), is mounted by
// init, in the mount namespace it shares with the launcher thread, once
// that thread has made every other mount of the call read-only.
var initCode = []byte{
	0xBF, 0x0F, 0x00, 0x00, 0x00, // mov edi, 15                 (PR_SET_NAME)
	0x48, 0x8D, 0x35, 0x6E, 0x00, 0x00, 0x00, // lea rsi, [rip+0x6e]  ("sbx-init" at 0x7a)
	0xB8, 0x9D, 0x00, 0x00, 0x00, // mov eax, 157                (SYS_prctl)
	0x0F, 0x05, //                   syscall
	0x31, 0xFF, //                   loop: xor edi, edi          (fd 0, offset 0x13)
	0x48, 0x89, 0xE6, //             mov rsi, rsp                (1 byte of argc as buffer)
	0xBA, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
	0x31, 0xC0, //                   xor eax, eax                (SYS_read)
	0x0F, 0x05, //                   syscall
	0x48, 0x83, 0xF8, 0xFC, //       cmp rax, -4                 (-EINTR)
	0x74, 0xEC, //                   je loop                     (-20: offset 0x13)
	0x48, 0x83, 0xF8, 0x01, //       cmp rax, 1
	0x75, 0x39, //                   jne exit                    (+57: offset 0x66)
	0x48, 0x8D, 0x3D, 0x3B, 0x00, 0x00, 0x00, // lea rdi, [rip+0x3b]  ("proc" at 0x6f)
	0x48, 0x8D, 0x35, 0x39, 0x00, 0x00, 0x00, // lea rsi, [rip+0x39]  ("/proc" at 0x74)
	0x48, 0x89, 0xFA, //             mov rdx, rdi                (fstype "proc")
	0x41, 0xBA, 0x0E, 0x00, 0x00, 0x00, // mov r10d, 0xe         (MS_NOSUID|MS_NODEV|MS_NOEXEC)
	0x45, 0x31, 0xC0, //             xor r8d, r8d                (no data)
	0xB8, 0xA5, 0x00, 0x00, 0x00, // mov eax, 165                (SYS_mount)
	0x0F, 0x05, //                   syscall
	0x50,                         //                   push rax
	0xBF, 0x01, 0x00, 0x00, 0x00, // mov edi, 1
	0x48, 0x89, 0xE6, //             mov rsi, rsp
	0xBA, 0x08, 0x00, 0x00, 0x00, // mov edx, 8
	0xB8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1                  (SYS_write)
	0x0F, 0x05, //                   syscall
	0x58,       //                   pop rax
	0xEB, 0xAD, //                   jmp loop                    (-83: offset 0x13)
	0x31, 0xFF, //                   exit: xor edi, edi
	0xB8, 0x3C, 0x00, 0x00, 0x00, // mov eax, 60                 (SYS_exit)
	0x0F, 0x05, //                   syscall
	'p', 'r', 'o', 'c', 0, //        "proc"
	'/', 'p', 'r', 'o', 'c', 0, //   "/proc"
	's', 'b', 'x', '-', 'i', 'n', 'i', 't', 0, // "sbx-init" (supervise.CallInitName)
}

const initBase = 0x400000

// initELF wraps initCode in a minimal static ELF64 executable: one header,
// one read+execute PT_LOAD segment mapping the whole file.
func initELF() []byte {
	const ehsize, phsize = 64, 56
	size := uint64(ehsize + phsize + len(initCode))
	var b bytes.Buffer
	b.Write([]byte{0x7F, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */, 0 /* SysV */})
	b.Write(make([]byte, 8))
	le := binary.LittleEndian
	for _, v := range []any{
		uint16(2), uint16(0x3E), uint32(1), // ET_EXEC, EM_X86_64, EV_CURRENT
		uint64(initBase + ehsize + phsize), // e_entry: the code after the headers
		uint64(ehsize), uint64(0),          // e_phoff, e_shoff
		uint32(0), uint16(ehsize), uint16(phsize), uint16(1), // flags, ehsize, phentsize, phnum
		uint16(0), uint16(0), uint16(0), // no section headers
		uint32(1), uint32(5), // PT_LOAD, PF_R|PF_X
		uint64(0), uint64(initBase), uint64(initBase), // offset, vaddr, paddr
		size, size, uint64(0x1000), // filesz, memsz, align
	} {
		binary.Write(&b, le, v)
	}
	b.Write(initCode)
	return b.Bytes()
}

var (
	initOnce sync.Once
	initPath string
	initErr  error
)

// initExecutable returns a path that execs the init program: a sealed,
// close-on-exec memfd reached through /proc/self/fd, so nothing is written
// to disk. The fd is opened once per sbx process.
func initExecutable() (string, error) {
	initOnce.Do(func() {
		fd, err := unix.MemfdCreate("sbx-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			initErr = fmt.Errorf("pid namespace init: memfd_create: %w", err)
			return
		}
		if _, err := unix.Write(fd, initELF()); err != nil {
			initErr = fmt.Errorf("pid namespace init: write: %w", err)
			return
		}
		seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			initErr = fmt.Errorf("pid namespace init: seal: %w", err)
			return
		}
		initPath = fmt.Sprintf("/proc/self/fd/%d", fd)
	})
	return initPath, initErr
}
