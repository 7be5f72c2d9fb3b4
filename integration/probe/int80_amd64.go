//go:build linux

package main

func int80Getpid() int32

// int80 runs getpid through the i386 syscall ABI. The kernel returns the pid
// (truncated to 32 bits) when IA32 emulation is on and nothing filters it.
func int80() result {
	r := int80Getpid()
	if r < 0 {
		return fail("int80", errnoName(-int(r)), "int $0x80 getpid returned an error")
	}
	return result{Op: "int80", OK: true, Detail: "int $0x80 getpid returned " + itoa(int(r))}
}
