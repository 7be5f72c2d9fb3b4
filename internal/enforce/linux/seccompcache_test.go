//go:build linux

package linux

import (
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
)

// TestSeccompFiltersCached: the filter a plan gets from the cache is the
// one compiling its (sockets, scope) afresh makes, every time.
func TestSeccompFiltersCached(t *testing.T) {
	for _, s := range []seccomp.SocketPolicy{seccomp.SocketsAny, seccomp.SocketsLoopbackNetns, seccomp.SocketsUnixOnly} {
		for _, sup := range []seccomp.NotifyScope{seccomp.NotifyNone, seccomp.NotifyWrites, seccomp.NotifyReads} {
			for range 2 { // the first compiles, the second is cached
				f, err := seccompFilters(s, sup)
				if err != nil {
					t.Fatal(err)
				}
				table := seccomp.SeccompTable(s, sup)
				prog, err := seccomp.CompileSeccomp(table)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(f.table, table) || !reflect.DeepEqual(f.prog, seccomp.BPFProgram(prog)) {
					t.Fatalf("sockets %v, scope %v: the cached filter differs from a fresh compile", s, sup)
				}
				if sup != seccomp.NotifyNone {
					plain, _ := seccomp.CompileSeccomp(seccomp.SeccompRules(s))
					if !reflect.DeepEqual(f.plain, seccomp.BPFProgram(plain)) {
						t.Fatalf("sockets %v, scope %v: the cached plain filter differs", s, sup)
					}
				} else if f.plain != nil {
					t.Fatalf("sockets %v: a plain filter without a supervisor", s)
				}
			}
		}
	}
}
