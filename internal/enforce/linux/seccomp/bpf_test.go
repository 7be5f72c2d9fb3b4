//go:build linux

package seccomp

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data from include/uapi/linux/seccomp.h.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// bytes serialises d the way the kernel lays it out on a little-endian arch.
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(d.Nr))
	binary.LittleEndian.PutUint32(b[4:], d.Arch)
	binary.LittleEndian.PutUint64(b[8:], d.IP)
	for i, a := range d.Args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// The interpreter spells its opcodes out from the unix.BPF_* parts rather
// than reusing the compiler's constants, so a wrong constant in bpf.go is an
// unknown opcode here instead of a shared mistake.
const (
	tLdAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	tAndK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	tJeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	tJgtK   = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	tJsetK  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	tJa     = unix.BPF_JMP | unix.BPF_JA
	tRetK   = unix.BPF_RET | unix.BPF_K
)

// verifyFilter applies the checks the kernel's classic BPF checker
// (bpf_check_classic, seccomp_check_filter) makes on this subset, and refuses
// every instruction outside it.
func verifyFilter(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > 4096 {
		return fmt.Errorf("program length %d out of range 1..4096", len(prog))
	}
	inRange := func(pc int, off uint32) bool { return uint64(pc)+1+uint64(off) < uint64(len(prog)) }
	for pc, ins := range prog {
		switch ins.Code {
		case tLdAbsW:
			if ins.K%4 != 0 || ins.K+4 > 64 {
				return fmt.Errorf("pc %d: load at offset %d outside seccomp_data or misaligned", pc, ins.K)
			}
		case tAndK, tRetK:
		case tJeqK, tJgtK, tJsetK:
			if !inRange(pc, uint32(ins.Jt)) || !inRange(pc, uint32(ins.Jf)) {
				return fmt.Errorf("pc %d: conditional jump out of the program", pc)
			}
			continue
		case tJa:
			if !inRange(pc, ins.K) {
				return fmt.Errorf("pc %d: jump out of the program", pc)
			}
		default:
			return fmt.Errorf("pc %d: opcode %#x is outside the interpreted subset", pc, ins.Code)
		}
		if ins.Jt != 0 || ins.Jf != 0 {
			return fmt.Errorf("pc %d: opcode %#x has jump offsets", pc, ins.Code)
		}
	}
	if prog[len(prog)-1].Code != tRetK {
		return errors.New("last instruction is not a return")
	}
	return nil
}

// runFilter evaluates prog on d and returns the seccomp action value.
// Jumps only go forward, so the loop terminates.
func runFilter(prog []unix.SockFilter, d seccompData) (uint32, error) {
	if err := verifyFilter(prog); err != nil {
		return 0, err
	}
	mem := d.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case tLdAbsW:
			a = binary.LittleEndian.Uint32(mem[ins.K:])
		case tAndK:
			a &= ins.K
		case tJeqK:
			pc += jumpOff(a == ins.K, ins)
		case tJgtK:
			pc += jumpOff(a > ins.K, ins)
		case tJsetK:
			pc += jumpOff(a&ins.K != 0, ins)
		case tJa:
			pc += int(ins.K)
		case tRetK:
			return ins.K, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x is outside the interpreted subset", pc, ins.Code)
		}
	}
	return 0, errors.New("ran off the end of the program")
}

func jumpOff(cond bool, ins unix.SockFilter) int {
	if cond {
		return int(ins.Jt)
	}
	return int(ins.Jf)
}

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

const (
	retAllowT  = uint32(unix.SECCOMP_RET_ALLOW)
	retKillT   = uint32(unix.SECCOMP_RET_KILL_PROCESS)
	retNotifyT = uint32(unix.SECCOMP_RET_USER_NOTIF)
)

func describeRet(r uint32) string {
	switch {
	case r == retAllowT:
		return "ALLOW"
	case r == retKillT:
		return "KILL_PROCESS"
	case r == retNotifyT:
		return "USER_NOTIF"
	case r&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + errnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("%#x", r)
}

func x86(nr uint32, args ...uint64) seccompData {
	d := seccompData{Nr: int32(nr), Arch: unix.AUDIT_ARCH_X86_64}
	copy(d.Args[:], args)
	return d
}

func TestSeccompInterpreterRejects(t *testing.T) {
	ret := unix.SockFilter{Code: tRetK, K: retAllowT}
	tests := []struct {
		name string
		prog []unix.SockFilter
	}{
		{"empty", nil},
		{"ret A", []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_A}}},
		{"indirect load", []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_IND}, ret}},
		{"half-word load", []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS}, ret}},
		{"ALU OR", []unix.SockFilter{{Code: unix.BPF_ALU | unix.BPF_OR | unix.BPF_K}, ret}},
		{"JEQ X", []unix.SockFilter{{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X}, ret}},
		{"load past seccomp_data", []unix.SockFilter{{Code: tLdAbsW, K: 64}, ret}},
		{"misaligned load", []unix.SockFilter{{Code: tLdAbsW, K: 2}, ret}},
		{"jeq past the end", []unix.SockFilter{{Code: tJeqK, Jt: 1}, ret}},
		{"ja past the end", []unix.SockFilter{{Code: tJa, K: 1}, ret}},
		{"jump offsets on a load", []unix.SockFilter{{Code: tLdAbsW, Jt: 1}, ret, ret}},
		{"no final return", []unix.SockFilter{ret, {Code: tLdAbsW}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := runFilter(tt.prog, x86(0)); err == nil {
				t.Fatalf("runFilter accepted the program and returned %s", describeRet(r))
			}
		})
	}
}

func TestSeccompInterpreterSubset(t *testing.T) {
	// A hand-written program using every interpreted opcode:
	// nr > 10 -> ERRNO(1); (arg0 & 0xf0) set -> ERRNO(2); arg0 == 7 -> ERRNO(3); else ALLOW.
	prog := []unix.SockFilter{
		{Code: tLdAbsW, K: 0},
		{Code: tJgtK, K: 10, Jt: 0, Jf: 1},
		{Code: tRetK, K: retErrno(1)},
		{Code: tLdAbsW, K: 16},
		{Code: tJsetK, K: 0xf0, Jt: 0, Jf: 1},
		{Code: tRetK, K: retErrno(2)},
		{Code: tAndK, K: 0xf},
		{Code: tJeqK, K: 7, Jt: 1, Jf: 0},
		{Code: tJa, K: 1},
		{Code: tRetK, K: retErrno(3)},
		{Code: tRetK, K: retAllowT},
	}
	tests := []struct {
		name string
		data seccompData
		want uint32
	}{
		{"jgt taken", x86(11), retErrno(1)},
		{"jset taken", x86(1, 0x10), retErrno(2)},
		{"jeq after and", x86(1, 0x7), retErrno(3)},
		{"high word ignored", x86(1, 1<<32|0x7), retErrno(3)},
		{"ja to allow", x86(1, 0x8), retAllowT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runFilter(prog, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", describeRet(got), describeRet(tt.want))
			}
		})
	}
}

func TestCompileSeccompRejectsInvalidRules(t *testing.T) {
	ok := SeccompRule{Name: "x", Nr: 1, Errno: unix.EPERM, Reason: "test"}
	with := func(f func(*SeccompRule)) SeccompRule { r := ok; f(&r); return r }
	tests := []struct {
		name string
		rule SeccompRule
		want string
	}{
		{"no name", with(func(r *SeccompRule) { r.Name = "" }), "no syscall name"},
		{"errno zero fakes success", with(func(r *SeccompRule) { r.Errno = 0 }), "errno 0"},
		{"errno above MAX_ERRNO", with(func(r *SeccompRule) { r.Errno = 4096 }), "errno 4096"},
		{"x32 number", with(func(r *SeccompRule) { r.Nr = 0x40000001 }), "x32"},
		{"arg index 6", with(func(r *SeccompRule) { r.Args = []ArgCond{argEq(6, 1)} }), "index 6"},
		{"negative arg index", with(func(r *SeccompRule) { r.Args = []ArgCond{argEq(-1, 1)} }), "index -1"},
		{"zero op", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0}} }), "unknown comparison"},
		{"mask on CmpEq", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0, Op: CmpEq, Value: 1, Mask: 1}} }), "mask"},
		{"CmpMaskedEq without mask", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0, Op: CmpMaskedEq}} }), "non-zero mask"},
		{"value outside mask", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0, Op: CmpMaskedEq, Value: 3, Mask: 1}} }), "never match"},
		{"CmpAnySet without mask", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0, Op: CmpAnySet}} }), "non-zero mask"},
		{"CmpAnySet with a value", with(func(r *SeccompRule) { r.Args = []ArgCond{{Index: 0, Op: CmpAnySet, Mask: 3, Value: 1}} }), "no value"},
		{"notify with an errno", with(func(r *SeccompRule) { r.Action = ActNotify }), "supervisor decides"},
		{"unknown action", with(func(r *SeccompRule) { r.Action = 7 }), "unknown action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSeccomp([]SeccompRule{ok, tt.rule})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "seccomp rule 1") {
				t.Errorf("error %q does not name the rule index", err)
			}
		})
	}
}

func TestCompileSeccompJumpLimit(t *testing.T) {
	many := func(n int) SeccompRule {
		r := SeccompRule{Name: "x", Nr: 1, Errno: unix.EPERM}
		for i := range n {
			r.Args = append(r.Args, argNe(0, uint32(i+1)))
		}
		return r
	}
	// A first rule needs no nr reload: its block is jeq nr, 2 per
	// condition, ret. The jeq nr skip is 2n+1, which fits 8 bits up to 127.
	if _, err := CompileSeccomp([]SeccompRule{many(127)}); err != nil {
		t.Errorf("127 conditions: %v", err)
	}
	if _, err := CompileSeccomp([]SeccompRule{many(128)}); !errors.Is(err, errJumpTooFar) {
		t.Errorf("128 conditions: got %v, want errJumpTooFar", err)
	}
	// The full-width block must still behave: only arg0 == 0 (not any of
	// 1..127) is refused.
	prog, err := CompileSeccomp([]SeccompRule{many(127)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg  uint64
		want uint32
	}{{0, retErrno(unix.EPERM)}, {1, retAllowT}, {127, retAllowT}, {128, retErrno(unix.EPERM)}} {
		if got, err := runFilter(prog, x86(1, c.arg)); err != nil || got != c.want {
			t.Errorf("arg0=%d: got %s, %v; want %s", c.arg, describeRet(got), err, describeRet(c.want))
		}
	}
}

func TestCompileSeccompProgramLimit(t *testing.T) {
	rules := make([]SeccompRule, 2100) // 2 instructions each, past 4096
	for i := range rules {
		rules[i] = SeccompRule{Name: "x", Nr: uint32(i), Errno: unix.EPERM}
	}
	if _, err := CompileSeccomp(rules); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("got %v, want a program-length error", err)
	}
}

func TestCompileSeccompMaskedEq(t *testing.T) {
	prog, err := CompileSeccomp([]SeccompRule{{
		Name: "x", Nr: 9, Errno: unix.EACCES,
		Args: []ArgCond{{Index: 3, Op: CmpMaskedEq, Mask: 0xff00, Value: 0x1200}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		arg3 uint64
		want uint32
	}{
		{"match", 0x1234, retErrno(unix.EACCES)},
		{"match with high bits", 0xffffffff_00001299, retErrno(unix.EACCES)},
		{"masked bits differ", 0x1334, retAllowT},
		{"match only in high word", 0x1200 << 32, retAllowT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runFilter(prog, x86(9, 0, 0, 0, tt.arg3))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", describeRet(got), describeRet(tt.want))
			}
		})
	}
}

func TestCompileSeccompAnySetNotify(t *testing.T) {
	prog, err := CompileSeccomp([]SeccompRule{
		{Name: "x", Nr: 9, Errno: unix.EACCES, Args: []ArgCond{argEq(0, 1)}},
		{Name: "x", Nr: 9, Action: ActNotify, Args: []ArgCond{argAnySet(2, 0x243)}},
		{Name: "y", Nr: 10, Action: ActNotify},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data seccompData
		want uint32
	}{
		{"errno rule first", x86(9, 1, 0, 0x1), retErrno(unix.EACCES)},
		{"one mask bit", x86(9, 0, 0, 0x1), retNotifyT},
		{"another mask bit", x86(9, 0, 0, 0x200), retNotifyT},
		{"all mask bits", x86(9, 0, 0, 0x243), retNotifyT},
		{"bits outside the mask", x86(9, 0, 0, 0x80000), retAllowT},
		{"mask bits only in the high word", x86(9, 0, 0, 0x243<<32), retAllowT},
		{"zero", x86(9, 0, 0, 0), retAllowT},
		{"unconditional notify after a conditional rule", x86(10, 0, 0, 0), retNotifyT},
		{"other nr", x86(11, 0, 0, 0x243), retAllowT},
	}
	for _, tt := range tests {
		if got, err := runFilter(prog, tt.data); err != nil || got != tt.want {
			t.Errorf("%s: got %s, %v; want %s", tt.name, describeRet(got), err, describeRet(tt.want))
		}
	}
}

// TestCompileSeccompNrReload pins the accumulator tracking: a rule with
// conditions leaves an argument in A, so the next rule must reload nr.
func TestCompileSeccompNrReload(t *testing.T) {
	rules := []SeccompRule{
		{Name: "a", Nr: 5, Errno: unix.EPERM, Args: []ArgCond{argEq(0, 7)}},
		{Name: "b", Nr: 7, Errno: unix.EACCES},
		{Name: "c", Nr: 8, Errno: unix.EIO},
	}
	prog, err := CompileSeccomp(rules)
	if err != nil {
		t.Fatal(err)
	}
	// nr 5 with arg0 == 8 falls out of rule a with 8 in A; without the
	// reload, rule c (nr 8) would then fire.
	tests := []struct {
		data seccompData
		want uint32
	}{
		{x86(5, 7), retErrno(unix.EPERM)},
		{x86(5, 8), retAllowT},
		{x86(7), retErrno(unix.EACCES)},
		{x86(8), retErrno(unix.EIO)},
		{x86(6, 7), retAllowT},
	}
	for _, tt := range tests {
		if got, err := runFilter(prog, tt.data); err != nil || got != tt.want {
			t.Errorf("nr=%d arg0=%d: got %s, %v; want %s", tt.data.Nr, tt.data.Args[0], describeRet(got), err, describeRet(tt.want))
		}
	}
}

func TestSeccompRuleString(t *testing.T) {
	tests := []struct {
		rule SeccompRule
		want string
	}{
		{SeccompRule{Name: "ioctl", Args: []ArgCond{argEq(1, 0x5412)}, Errno: unix.EPERM, Reason: "TIOCSTI"},
			"ioctl arg1==0x5412 -> EPERM  # TIOCSTI"},
		{SeccompRule{Name: "socket", Args: []ArgCond{argNe(0, 1), argNe(0, 2)}, Errno: unix.EAFNOSUPPORT},
			"socket arg0!=0x1 && arg0!=0x2 -> EAFNOSUPPORT"},
		{SeccompRule{Name: "x", Args: []ArgCond{{Index: 2, Op: CmpMaskedEq, Mask: 0xf0, Value: 0x10}}, Errno: unix.EACCES, Reason: "r"},
			"x arg2&0xf0==0x10 -> EACCES  # r"},
		{SeccompRule{Name: "ptrace", Errno: unix.EPERM, Reason: "memory"}, "ptrace -> EPERM  # memory"},
		{SeccompRule{Name: "openat", Args: []ArgCond{argAnySet(2, 0x243)}, Action: ActNotify, Reason: "w"},
			"openat arg2&0x243!=0 -> USER_NOTIF  # w"},
	}
	for _, tt := range tests {
		if got := tt.rule.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestBPFProgramJSON: a compiled program survives the stage payload's JSON
// form unchanged, and a truncated one is refused.
func TestBPFProgramJSON(t *testing.T) {
	prog, err := CompileSeccomp(SeccompTable(SocketsLoopbackNetns, NotifyWrites))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(BPFProgram(prog))
	if err != nil {
		t.Fatal(err)
	}
	var back BPFProgram
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, BPFProgram(prog)) {
		t.Fatalf("round trip changed the program: %d instructions in, %d out", len(prog), len(back))
	}
	if err := json.Unmarshal([]byte(`"AAAAAAAAAAAA"`), &back); err == nil {
		t.Error("a 9-byte program decoded")
	}
}
