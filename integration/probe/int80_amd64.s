//go:build linux

#include "textflag.h"

// func int80Getpid() int32
// Issues getpid through the i386 compat entry (int $0x80, eax=20). A correct
// sandbox filter kills the process with SIGSYS before the kernel runs it.
TEXT ·int80Getpid(SB), NOSPLIT, $0-4
	MOVL $20, AX
	INT $0x80
	MOVL AX, ret+0(FP)
	RET
