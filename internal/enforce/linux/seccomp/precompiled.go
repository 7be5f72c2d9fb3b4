//go:build linux

package seccomp

//go:generate env SBX_WRITE_PRECOMPILED=1 go test -count=1 -run ^TestPrecompiled$ .

import "golang.org/x/sys/unix"

// The programs are a pure function of (SocketPolicy, NotifyScope), nine
// kinds, so those of amd64 are compiled when sbx is built (go generate
// writes precompiled_amd64.go, through TestPrecompiled, which otherwise
// holds it to CompileSeccomp).
// `sbx run` compiles them once per process, cold: ~0.25 ms of its CPU
// (#31). Other architectures compile them at run time.

// precompiledKinds is how many SocketPolicy and NotifyScope values there are.
const precompiledKinds = 3

// Programs compiles the programs of kind (s, sup): CompileSeccomp of
// table, which is SeccompTable(s, sup), and, when sup is not NotifyNone,
// of SeccompRules(s), the plain program loaded where no listener can be
// had. Precompiled is them as sbx was built with them.
func Programs(table []SeccompRule, s SocketPolicy, sup NotifyScope) (prog, plain []unix.SockFilter, err error) {
	if prog, err = CompileSeccomp(table); err != nil || sup == NotifyNone {
		return prog, nil, err
	}
	plain, err = CompileSeccomp(SeccompRules(s))
	return prog, plain, err
}

// Precompiled returns the programs CompileSeccomp makes of
// SeccompTable(s, sup) and, when sup is not NotifyNone, of SeccompRules(s),
// as built into sbx for this architecture; ok is false where none are.
// The slices are shared: nothing may write them.
func Precompiled(s SocketPolicy, sup NotifyScope) (prog, plain []unix.SockFilter, ok bool) {
	if s < 0 || s >= precompiledKinds || sup < 0 || sup >= precompiledKinds {
		return nil, nil, false
	}
	p := precompiledPrograms[s][sup]
	if p[0] == nil {
		return nil, nil, false
	}
	return p[0], p[1], true
}

// Ref names a program built into sbx: the one of SeccompTable(Sockets,
// Notify), or, Plain, the one of SeccompRules(Sockets) beside it. A plan
// sent to sbx's stage (the same binary) names its programs instead of
// carrying them: ~5 KB of its JSON, a third of the stage's CPU (#31).
type Ref struct {
	Sockets SocketPolicy
	Notify  NotifyScope
	Plain   bool `json:",omitempty"`
}

// RefOf names p when p is one of the programs Precompiled returns (the
// same slice, not a copy with the same instructions).
func RefOf(p []unix.SockFilter) (Ref, bool) {
	if len(p) == 0 {
		return Ref{}, false
	}
	for s := range precompiledPrograms {
		for sup := range precompiledPrograms[s] {
			for i, q := range precompiledPrograms[s][sup] {
				if len(q) == len(p) && &q[0] == &p[0] {
					return Ref{Sockets: SocketPolicy(s), Notify: NotifyScope(sup), Plain: i == 1}, true
				}
			}
		}
	}
	return Ref{}, false
}

// Program is the program r names; ok is false when sbx has none such.
func (r Ref) Program() (p []unix.SockFilter, ok bool) {
	prog, plain, ok := Precompiled(r.Sockets, r.Notify)
	if r.Plain {
		prog = plain
	}
	return prog, ok && prog != nil
}
