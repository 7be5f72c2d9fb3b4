//go:build linux

package seccomp

//go:generate go run gen_precompiled.go

import "golang.org/x/sys/unix"

// The programs are a pure function of (SocketPolicy, NotifyScope), nine
// kinds, so those of amd64 are compiled when sbx is built (go generate
// writes precompiled_amd64.go; TestPrecompiled holds it to CompileSeccomp).
// `sbx run` compiles them once per process, cold: ~0.25 ms of its CPU
// (#31). Other architectures compile them at run time.

// precompiledKinds is how many SocketPolicy and NotifyScope values there are.
const precompiledKinds = 3

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
