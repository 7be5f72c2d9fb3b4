package journal

import (
	"os"
	"testing"
)

// TestTornTail cuts the log inside its last frame at every byte: replay
// gives every earlier record and reports the last as torn and dropped.
func TestTornTail(t *testing.T) {
	recs := basic("s")
	full := writeLog(t, t.TempDir(), "s", recs...)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	last := len(frameOf(t, recs[len(recs)-1]))
	start := len(data) - last
	for cut := start + 1; cut < len(data); cut++ {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/s.log", data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		s, ps := replayOne(t, dir)
		if d := sameRecords(s.Records, recs[:len(recs)-1]); d != "" {
			t.Fatalf("cut at %d: %s", cut, d)
		}
		if len(ps) != 1 || ps[0].Kind != ProblemTorn || ps[0].Effect != EffectDropped || ps[0].Offset != int64(start) {
			t.Fatalf("cut at %d: problems %v, want one torn, dropped at offset %d", cut, ps, start)
		}
	}
}

// TestEveryByteFlipped damages each byte of a log in turn: replay never
// returns a record that was not written, returns every record before the
// damaged frame, and reports the damage, as dropped when it is in the last
// frame and as stopping the replay before that.
func TestEveryByteFlipped(t *testing.T) {
	recs := basic("s")
	full := writeLog(t, t.TempDir(), "s", recs...)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int // frame offsets
	for off, i := 0, 0; i < len(recs); i++ {
		starts = append(starts, off)
		off += len(frameOf(t, recs[i]))
	}
	for pos := range data {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := append([]byte(nil), data...)
			bad[pos] ^= x
			dir := t.TempDir()
			if err := os.WriteFile(dir+"/s.log", bad, 0o600); err != nil {
				t.Fatal(err)
			}
			frameIdx := 0
			for i, s := range starts {
				if pos >= s {
					frameIdx = i
				}
			}
			s, ps := replayOne(t, dir)
			if d := sameRecords(s.Records, recs[:frameIdx]); d != "" {
				t.Fatalf("byte %d ^ %#x: %s", pos, x, d)
			}
			want := EffectStopped
			if frameIdx == len(recs)-1 {
				want = EffectDropped
			}
			if len(ps) != 1 || ps[0].Effect != want || ps[0].Offset != int64(starts[frameIdx]) {
				t.Fatalf("byte %d ^ %#x: problems %v, want one %s at offset %d", pos, x, ps, want, starts[frameIdx])
			}
		}
	}
}

// TestZeroTail: zeros past the last frame (a file system's allocation for a
// write that never landed) are a torn tail, not corruption.
func TestZeroTail(t *testing.T) {
	dir := t.TempDir()
	p := writeLog(t, dir, "s", basic("s")...)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 4096))
	f.Close()
	s, ps := replayOne(t, dir)
	if d := sameRecords(s.Records, basic("s")); d != "" {
		t.Fatal(d)
	}
	if len(ps) != 1 || ps[0].Kind != ProblemTorn || ps[0].Effect != EffectDropped {
		t.Fatalf("problems %v, want one torn, dropped", ps)
	}
}
