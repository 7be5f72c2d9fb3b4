//go:build linux

package seccomp

import (
	"runtime"
	"slices"
	"testing"
)

// TestPrecompiled: the programs built into sbx are, for every kind, those
// CompileSeccomp makes of the tables now (else run go generate in this
// directory); other architectures have none and compile at run time.
func TestPrecompiled(t *testing.T) {
	for s := SocketsAny; s <= SocketsUnixOnly; s++ {
		for sup := NotifyNone; sup <= NotifyReads; sup++ {
			prog, plain, ok := Precompiled(s, sup)
			if runtime.GOARCH != "amd64" {
				if ok {
					t.Errorf("%s, %s: precompiled on %s", s, sup, runtime.GOARCH)
				}
				continue
			}
			if !ok {
				t.Fatalf("%s, %s: not precompiled", s, sup)
			}
			want, err := CompileSeccomp(SeccompTable(s, sup))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(prog, want) {
				t.Errorf("%s, %s: the precompiled program is stale: run go generate in internal/enforce/linux/seccomp", s, sup)
			}
			if sup == NotifyNone {
				if plain != nil {
					t.Errorf("%s, %s: a plain program beside an unsupervised one", s, sup)
				}
				continue
			}
			wp, err := CompileSeccomp(SeccompRules(s))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plain, wp) {
				t.Errorf("%s, %s: the precompiled plain program is stale: run go generate in internal/enforce/linux/seccomp", s, sup)
			}
		}
	}
	if _, _, ok := Precompiled(SocketsUnixOnly+1, NotifyNone); ok {
		t.Error("a kind past the last is precompiled")
	}
}
