//go:build linux

package linux

import (
	"reflect"
	"testing"
)

// TestSeccompFiltersCached: the filter a plan gets from the cache is the
// one compiling its (sockets, scope) afresh makes, every time.
func TestSeccompFiltersCached(t *testing.T) {
	for _, s := range []SocketPolicy{SocketsAny, SocketsLoopbackNetns, SocketsUnixOnly} {
		for _, sup := range []NotifyScope{NotifyNone, NotifyWrites, NotifyReads} {
			for range 2 { // the first compiles, the second is cached
				f, err := seccompFilters(s, sup)
				if err != nil {
					t.Fatal(err)
				}
				table := SeccompTable(s, sup)
				prog, err := CompileSeccomp(table)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(f.table, table) || !reflect.DeepEqual(f.prog, BPFProgram(prog)) {
					t.Fatalf("sockets %v, scope %v: the cached filter differs from a fresh compile", s, sup)
				}
				if sup != NotifyNone {
					plain, _ := CompileSeccomp(SeccompRules(s))
					if !reflect.DeepEqual(f.plain, BPFProgram(plain)) {
						t.Fatalf("sockets %v, scope %v: the cached plain filter differs", s, sup)
					}
				} else if f.plain != nil {
					t.Fatalf("sockets %v: a plain filter without a supervisor", s)
				}
			}
		}
	}
}
