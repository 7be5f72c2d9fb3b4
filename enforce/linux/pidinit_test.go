//go:build linux

package linux

import (
	"bytes"
	"debug/elf"
	"testing"
)

// TestInitELF checks the hand-made init executable against Go's ELF reader:
// a static x86-64 executable whose single R+X segment holds the code at the
// entry point.
func TestInitELF(t *testing.T) {
	f, err := elf.NewFile(bytes.NewReader(initELF()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Fatalf("class %v machine %v type %v", f.Class, f.Machine, f.Type)
	}
	if len(f.Progs) != 1 || f.Progs[0].Type != elf.PT_LOAD || f.Progs[0].Flags != elf.PF_R|elf.PF_X {
		t.Fatalf("segments: %+v", f.Progs)
	}
	p := f.Progs[0]
	off := f.Entry - p.Vaddr
	code := make([]byte, len(initCode))
	if _, err := p.ReadAt(code, int64(off)); err != nil || !bytes.Equal(code, initCode) {
		t.Fatalf("code at entry %#x: %x, %v", f.Entry, code, err)
	}
	// The retry jump must land on the first instruction.
	for _, j := range []struct{ at, next int }{{18, 20}} {
		if got := j.next + int(int8(initCode[j.at+1])); got != 0 {
			t.Errorf("jump at %d lands on %d, want 0", j.at, got)
		}
	}
}
