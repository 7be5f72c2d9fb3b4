//go:build linux

package linux

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"testing"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
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
	// The jumps must land where the listing in pidinit.go says: the two
	// back to the read at offset 0x13 (after the prctl), the one forward on
	// the exit.
	for _, j := range []struct{ at, next, want int }{{0x25, 0x27, 0x13}, {0x2b, 0x2d, 0x66}, {0x64, 0x66, 0x13}} {
		if got := j.next + int(int8(initCode[j.at+1])); got != j.want {
			t.Errorf("jump at %#x lands on %#x, want %#x", j.at, got, j.want)
		}
	}
	// The rip-relative leas must point at the three strings.
	for _, l := range []struct {
		at   int
		want string
	}{{0x05, supervise.CallInitName + "\x00"}, {0x2d, "proc\x00"}, {0x34, "/proc\x00"}} {
		off := l.at + 7 + int(int32(binary.LittleEndian.Uint32(initCode[l.at+3:])))
		if got := string(initCode[off : off+len(l.want)]); got != l.want {
			t.Errorf("lea at %#x points at %q, want %q", l.at, got, l.want)
		}
	}
}

// TestInitCodeSize pins the size the listing in pidinit.go states.
func TestInitCodeSize(t *testing.T) {
	if len(initCode) != 131 {
		t.Errorf("initCode is %d bytes; the comment says 131", len(initCode))
	}
}
