//go:build linux

package seccomp

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// BPFProgram is a classic BPF program. Its JSON form is the kernel's
// 8-byte instructions, base64-encoded: the stage launch sends its plan as
// JSON, and decoding some 300 instruction objects took ~0.3 ms of a stage's
// start, the raw form a few microseconds.
type BPFProgram []unix.SockFilter

const bpfInsnSize = 8

func (p BPFProgram) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(p)*bpfInsnSize)
	for _, f := range p {
		b = binary.LittleEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.LittleEndian.AppendUint32(b, f.K)
	}
	return json.Marshal(b)
}

func (p *BPFProgram) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	if len(b)%bpfInsnSize != 0 {
		return fmt.Errorf("bpf program: %d bytes is not a whole number of instructions", len(b))
	}
	prog := make(BPFProgram, 0, len(b)/bpfInsnSize)
	for ; len(b) > 0; b = b[bpfInsnSize:] {
		prog = append(prog, unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])})
	}
	*p = prog
	return nil
}

// CmpOp is how an ArgCond compares the low 32 bits of a syscall argument.
type CmpOp int

const (
	CmpEq       CmpOp = iota + 1 // low32(arg) == Value
	CmpNe                        // low32(arg) != Value
	CmpMaskedEq                  // low32(arg) & Mask == Value
	CmpAnySet                    // low32(arg) & Mask != 0 (compiled to JSET)
)

// ArgCond is one condition on a syscall argument. It compares only the low 32
// bits of args[Index], which is exactly what the kernel uses for int and
// unsigned int parameters (ioctl's cmd, socket's family and protocol), so a
// caller cannot dodge a rule by setting the high bits: ioctl(fd,
// TIOCSTI|1<<32) is still TIOCSTI to the kernel and to the filter.
//
// IMPORTANT: low-32-bit semantics are wrong for parameters the kernel reads as
// 64-bit (pointers, sizes, off_t, unsigned long flags). Do not write an
// ArgCond on such a parameter; the table has none.
type ArgCond struct {
	Index int    // argument index, 0..5
	Op    CmpOp  // comparison
	Value uint32 // compared with the low word (after Mask for CmpMaskedEq); zero for CmpAnySet
	Mask  uint32 // only for CmpMaskedEq and CmpAnySet; must be zero otherwise
}

func (c ArgCond) String() string {
	switch c.Op {
	case CmpEq:
		return fmt.Sprintf("arg%d==%#x", c.Index, c.Value)
	case CmpNe:
		return fmt.Sprintf("arg%d!=%#x", c.Index, c.Value)
	case CmpMaskedEq:
		return fmt.Sprintf("arg%d&%#x==%#x", c.Index, c.Mask, c.Value)
	case CmpAnySet:
		return fmt.Sprintf("arg%d&%#x!=0", c.Index, c.Mask)
	}
	return fmt.Sprintf("arg%d?op%d", c.Index, int(c.Op))
}

// seccomp_data layout (include/uapi/linux/seccomp.h):
//
//	struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; };
const (
	seccompDataNrOff   = 0
	seccompDataArchOff = 4
	seccompDataArgsOff = 16
	seccompDataSize    = 64
	seccompMaxArgs     = 6
)

// argLowOff is the offset of the low 32-bit word of args[i]. The arguments
// are native-endian u64s; every architecture this package supports is
// little-endian, so the low word comes first.
func argLowOff(i int) uint32 { return uint32(seccompDataArgsOff + 8*i) }

// bpfMaxInsns is BPF_MAXINSNS: the kernel refuses longer classic programs.
const bpfMaxInsns = 4096

// maxErrno is the kernel's MAX_ERRNO; SECCOMP_RET_ERRNO clamps larger data.
const maxErrno = 4095

// The instruction subset the compiler emits. The userspace interpreter in
// bpf_test.go accepts these plus JGT and JA, and fails on anything else.
const (
	opLdAbsW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	opAndK     = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	opJeqK     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	opJgtK     = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	opJa       = unix.BPF_JMP | unix.BPF_JA
	opJsetK    = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	opRetK     = unix.BPF_RET | unix.BPF_K
	retAllow   = unix.SECCOMP_RET_ALLOW
	retKill    = unix.SECCOMP_RET_KILL_PROCESS
	retErrnoK  = unix.SECCOMP_RET_ERRNO
	retUnotify = unix.SECCOMP_RET_USER_NOTIF
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

// errJumpTooFar is returned when a rule block is too long for the 8-bit
// conditional jump offsets of classic BPF.
var errJumpTooFar = errors.New("jump offset exceeds 255 instructions")

// CompileSeccomp compiles a rule table into a classic BPF seccomp program.
//
// The program is, in order:
//
//  1. arch != native arch         -> SECCOMP_RET_KILL_PROCESS (USER_NOTIF
//     when the table has notify rules: see below)
//  2. nr has the x32 bit (amd64)  -> the same
//  3. a binary search on nr (JGT) down to a leaf of a few syscall numbers
//     (seccompLeaf), then their rules in table order; the first rule whose
//     Nr and every ArgCond match returns SECCOMP_RET_ERRNO|rule.Errno, or
//     SECCOMP_RET_USER_NOTIF for an ActNotify rule (the supervisor decides;
//     see enforce/linux/supervisor/supervise.go)
//  4. SECCOMP_RET_ALLOW, at the end of each leaf
//
// Rules of different syscall numbers never both match, so sorting them by
// number changes no verdict; rules of one number keep their order. The
// search is for the kernel's sake as much as the call's: when it loads a
// filter, the kernel runs it for every syscall number to find those it
// always allows (its action cache), and a chain of 75 rules made that
// ~0.1 ms of every launch here; a search reaches a leaf in ~5 steps.
//
// A foreign arch or the x32 ABI means the process switched syscall ABI, so
// every number in the table would mean something else: no rule may apply
// to it. Without a supervisor it is KILL_PROCESS (kernels older than 4.14
// do not know KILL_PROCESS and kill only the thread), and the report can
// only infer the cause from the SIGSYS death. A table that has notify rules
// is loaded with a listener, so the prologue sends the call to the
// supervisor instead (foreignABIRet): it names the syscall and the ABI in a
// denial and refuses it with ENOSYS, never letting it continue
// (abi.go).
//
// The errors mean the table itself is invalid (a bad argument index or
// operator, an errno of 0 that would fake success, a program too long for the
// kernel); no kernel support is probed here.
func CompileSeccomp(rules []SeccompRule) ([]unix.SockFilter, error) {
	arch, err := nativeSeccompArch()
	if err != nil {
		return nil, err
	}
	foreign := foreignABIRet(rules)
	prog := []unix.SockFilter{
		stmt(opLdAbsW, seccompDataArchOff),
		{Code: opJeqK, K: arch.audit, Jt: 1, Jf: 0},
		stmt(opRetK, foreign),
		stmt(opLdAbsW, seccompDataNrOff),
	}
	if arch.x32Bit != 0 {
		prog = append(prog,
			unix.SockFilter{Code: opJsetK, K: arch.x32Bit, Jt: 0, Jf: 1},
			stmt(opRetK, foreign))
	}
	for i, r := range rules {
		if err := r.validate(arch); err != nil {
			return nil, fmt.Errorf("seccomp rule %d (%s): %w", i, r.Name, err)
		}
	}
	search, err := compileSearch(groupByNr(rules))
	if err != nil {
		return nil, err
	}
	prog = append(prog, search...)
	if len(prog) > bpfMaxInsns {
		return nil, fmt.Errorf("seccomp program has %d instructions, the kernel allows %d", len(prog), bpfMaxInsns)
	}
	return prog, nil
}

// seccompLeaf is the most syscall numbers a leaf of the search tests one
// after the other.
const seccompLeaf = 4

// nrGroup is the rules of one syscall number, in table order.
type nrGroup struct {
	nr    uint32
	rules []SeccompRule
}

// groupByNr groups rules by syscall number, sorted by number.
func groupByNr(rules []SeccompRule) []nrGroup {
	var groups []nrGroup
	for _, r := range rules {
		i, found := slices.BinarySearchFunc(groups, r.Nr, func(g nrGroup, nr uint32) int { return cmp.Compare(g.nr, nr) })
		if !found {
			groups = slices.Insert(groups, i, nrGroup{nr: r.Nr})
		}
		groups[i].rules = append(groups[i].rules, r)
	}
	return groups
}

// compileSearch emits the search over groups (A holds nr on entry, and
// does at every node): a leaf is the groups' rule blocks in a chain ending
// in SECCOMP_RET_ALLOW; a node tests nr > the left half's last number and
// jumps over the left half to the right one when it is.
func compileSearch(groups []nrGroup) ([]unix.SockFilter, error) {
	if len(groups) <= seccompLeaf {
		return compileChain(groups)
	}
	mid := len(groups) / 2
	left, err := compileSearch(groups[:mid])
	if err != nil {
		return nil, err
	}
	right, err := compileSearch(groups[mid:])
	if err != nil {
		return nil, err
	}
	test := unix.SockFilter{Code: opJgtK, K: groups[mid-1].nr}
	if len(left) <= 255 {
		test.Jt = uint8(len(left))
		return slices.Concat([]unix.SockFilter{test}, left, right), nil
	}
	// Too far for a conditional jump: through an unconditional one.
	test.Jf = 1
	return slices.Concat([]unix.SockFilter{test, {Code: opJa, K: uint32(len(left))}}, left, right), nil
}

// compileChain emits groups' rules one block after the other, then
// SECCOMP_RET_ALLOW.
func compileChain(groups []nrGroup) ([]unix.SockFilter, error) {
	var prog []unix.SockFilter
	// accNr tracks whether the accumulator still holds nr at the start of the
	// next block: true after a rule without conditions, whose only way to
	// fall through is the nr mismatch.
	accNr := true
	for _, g := range groups {
		for _, r := range g.rules {
			block, err := compileRule(r, !accNr)
			if err != nil {
				return nil, fmt.Errorf("seccomp rule %s: %w", r.Name, err)
			}
			prog = append(prog, block...)
			accNr = len(r.Args) == 0
		}
	}
	return append(prog, stmt(opRetK, retAllow)), nil
}

// compileRule emits one self-contained block. Every mismatch jumps to the
// first instruction after the block, so blocks compose by concatenation and
// no jump leaves its own block.
func compileRule(r SeccompRule, reloadNr bool) ([]unix.SockFilter, error) {
	var b []unix.SockFilter
	// skips are the mismatch jumps, patched once the block length is known.
	// For CmpNe the mismatch is the JEQ being true.
	type skip struct {
		at     int
		onTrue bool
	}
	var skips []skip
	if reloadNr {
		b = append(b, stmt(opLdAbsW, seccompDataNrOff))
	}
	skips = append(skips, skip{len(b), false})
	b = append(b, unix.SockFilter{Code: opJeqK, K: r.Nr})
	for _, c := range r.Args {
		b = append(b, stmt(opLdAbsW, argLowOff(c.Index)))
		switch c.Op {
		case CmpEq:
			skips = append(skips, skip{len(b), false})
			b = append(b, unix.SockFilter{Code: opJeqK, K: c.Value})
		case CmpNe:
			skips = append(skips, skip{len(b), true})
			b = append(b, unix.SockFilter{Code: opJeqK, K: c.Value})
		case CmpMaskedEq:
			b = append(b, stmt(opAndK, c.Mask))
			skips = append(skips, skip{len(b), false})
			b = append(b, unix.SockFilter{Code: opJeqK, K: c.Value})
		case CmpAnySet:
			// JSET is true when A & K != 0: the mismatch is its false branch.
			skips = append(skips, skip{len(b), false})
			b = append(b, unix.SockFilter{Code: opJsetK, K: c.Mask})
		}
	}
	b = append(b, stmt(opRetK, r.ret()))
	next := len(b)
	for _, s := range skips {
		off := next - s.at - 1
		if off > 255 {
			return nil, fmt.Errorf("%d conditions: %w", len(r.Args), errJumpTooFar)
		}
		if s.onTrue {
			b[s.at].Jt = uint8(off)
		} else {
			b[s.at].Jf = uint8(off)
		}
	}
	return b, nil
}

func (r SeccompRule) validate(arch seccompArch) error {
	if r.Name == "" {
		return errors.New("rule has no syscall name")
	}
	if arch.x32Bit != 0 && r.Nr&arch.x32Bit != 0 {
		return fmt.Errorf("syscall number %#x has the x32 bit set; the prologue kills those before any rule", r.Nr)
	}
	switch r.Action {
	case ActErrno:
		// Errno 0 would make the syscall "succeed" without running, which is
		// never what a deny rule means.
		if r.Errno <= 0 || r.Errno > maxErrno {
			return fmt.Errorf("errno %d out of range 1..%d", int(r.Errno), maxErrno)
		}
	case ActNotify:
		// The supervisor picks the errno; one in the table would suggest
		// the filter returns it.
		if r.Errno != 0 {
			return fmt.Errorf("errno %d on a user-notification rule: the supervisor decides", int(r.Errno))
		}
	default:
		return fmt.Errorf("unknown action %d", int(r.Action))
	}
	for _, c := range r.Args {
		if c.Index < 0 || c.Index >= seccompMaxArgs {
			return fmt.Errorf("argument index %d out of range 0..%d", c.Index, seccompMaxArgs-1)
		}
		switch c.Op {
		case CmpEq, CmpNe:
			if c.Mask != 0 {
				return fmt.Errorf("%s: mask %#x is only meaningful with CmpMaskedEq and CmpAnySet", c, c.Mask)
			}
		case CmpAnySet:
			if c.Mask == 0 {
				return fmt.Errorf("%s: CmpAnySet needs a non-zero mask", c)
			}
			if c.Value != 0 {
				return fmt.Errorf("%s: CmpAnySet takes no value", c)
			}
		case CmpMaskedEq:
			if c.Mask == 0 {
				return fmt.Errorf("%s: CmpMaskedEq needs a non-zero mask", c)
			}
			if c.Value&^c.Mask != 0 {
				return fmt.Errorf("%s: value has bits outside the mask and can never match", c)
			}
		default:
			return fmt.Errorf("argument %d: unknown comparison %d", c.Index, int(c.Op))
		}
	}
	return nil
}

// String renders a rule for sbx explain, for example
// "ioctl arg1==0x5412 -> EPERM  # TIOCSTI: ...".
func (r SeccompRule) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	for i, c := range r.Args {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(" && ")
		}
		b.WriteString(c.String())
	}
	b.WriteString(" -> ")
	if r.Action == ActNotify {
		b.WriteString("USER_NOTIF")
	} else {
		b.WriteString(errnoName(r.Errno))
	}
	if r.Reason != "" {
		b.WriteString("  # ")
		b.WriteString(r.Reason)
	}
	return b.String()
}

// ret is the filter's return value for a matching call.
func (r SeccompRule) ret() uint32 {
	if r.Action == ActNotify {
		return retUnotify
	}
	return retErrnoK | uint32(r.Errno)
}

func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno(%d)", int(e))
}
