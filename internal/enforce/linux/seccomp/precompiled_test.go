//go:build linux

package seccomp

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
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

// TestRef: every precompiled program is named by a Ref that gives it
// back; a copy of one, an empty program and a kind sbx has not are not.
func TestRef(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		if _, ok := (Ref{}).Program(); ok {
			t.Errorf("a Ref names a program on %s", runtime.GOARCH)
		}
		return
	}
	n := 0
	for s := SocketsAny; s <= SocketsUnixOnly; s++ {
		for sup := NotifyNone; sup <= NotifyReads; sup++ {
			prog, plain, _ := Precompiled(s, sup)
			for i, p := range [][]unix.SockFilter{prog, plain} {
				if p == nil {
					continue
				}
				r, ok := RefOf(p)
				if want := (Ref{Sockets: s, Notify: sup, Plain: i == 1}); !ok || r != want {
					t.Errorf("RefOf(%s, %s, plain %t) = %+v, %t", s, sup, i == 1, r, ok)
				}
				if back, ok := r.Program(); !ok || &back[0] != &p[0] {
					t.Errorf("%+v.Program() is not the program", r)
				}
				if _, ok := RefOf(slices.Clone(p)); ok {
					t.Errorf("a copy of %+v is named", r)
				}
				n++
			}
		}
	}
	if n != 15 {
		t.Errorf("%d programs named, want 9 + 6 plain", n)
	}
	if _, ok := RefOf(nil); ok {
		t.Error("an empty program is named")
	}
	if _, ok := (Ref{Sockets: SocketsAny, Notify: NotifyNone, Plain: true}).Program(); ok {
		t.Error("the plain program of an unsupervised kind is named")
	}
	if _, ok := (Ref{Sockets: 7}).Program(); ok {
		t.Error("a kind past the last is named")
	}
}
