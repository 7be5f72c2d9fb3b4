package journal

import (
	"errors"
	"testing"
	"time"
)

// setLaterDelay sets LaterDelay for one test.
func setLaterDelay(t *testing.T, d time.Duration) {
	old := LaterDelay
	LaterDelay = d
	t.Cleanup(func() { LaterDelay = old })
}

// types is the record types replay reads from dir's one session.
func types(t *testing.T, dir string) []string {
	t.Helper()
	s, ps := replayOne(t, dir)
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	var out []string
	for _, r := range s.Records {
		out = append(out, r.Type)
	}
	return out
}

// TestLater: a record of Later is numbered at once and written by the
// next group commit, by the delay's own flush, by Flush or by Close, and
// not before: nothing is fsynced for it on the caller's path.
func TestLater(t *testing.T) {
	started := Record{Type: TypeCallStarted, Data: []byte(`{"call_id":"c1"}`)}
	finished := Record{Type: TypeCallFinished, Data: []byte(`{"call_id":"c1"}`)}
	t.Run("next-append", func(t *testing.T) {
		setLaterDelay(t, time.Hour)
		dir, w, _ := openedLog(t)
		if err := w.Append(started); err != nil {
			t.Fatal(err)
		}
		if err := w.Later(finished); err != nil {
			t.Fatal(err)
		}
		if got := types(t, dir); len(got) != 2 {
			t.Fatalf("after Later: %v on disk, want the finish not yet written", got)
		}
		if err := w.Append(Record{Type: TypeTurnBegun, Data: []byte(`{"turn_id":"t1"}`)}); err != nil {
			t.Fatal(err)
		}
		if got := types(t, dir); len(got) != 4 || got[2] != TypeCallFinished || got[3] != TypeTurnBegun {
			t.Fatalf("after the next Append: %v, want the finish before the turn", got)
		}
	})
	t.Run("delay", func(t *testing.T) {
		setLaterDelay(t, 10*time.Millisecond)
		dir, w, _ := openedLog(t)
		w.Append(started)
		if err := w.Later(finished); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); len(types(t, dir)) != 3; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the finish was not flushed after the delay: %v", types(t, dir))
			}
		}
	})
	t.Run("flush-close", func(t *testing.T) {
		setLaterDelay(t, time.Hour)
		dir, w, _ := openedLog(t)
		w.Append(started)
		w.Later(finished)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := types(t, dir); len(got) != 3 {
			t.Fatalf("after Flush: %v", got)
		}
		w.Append(Record{Type: TypeCallStarted, Data: []byte(`{"call_id":"c2"}`)})
		w.Later(Record{Type: TypeCallFinished, Data: []byte(`{"call_id":"c2"}`)})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := types(t, dir); len(got) != 5 {
			t.Fatalf("after Close: %v", got)
		}
	})
	t.Run("refused", func(t *testing.T) {
		_, w, _ := openedLog(t)
		if err := w.Later(Record{Type: "call/other"}); err == nil {
			t.Fatal("Later took an unknown type")
		}
	})
	t.Run("fsync-fails", func(t *testing.T) {
		setLaterDelay(t, time.Hour)
		_, w, f := openedLog(t)
		w.setFile(&failingFile{f: f, budget: 1 << 20, syncErr: errors.New("EIO (test)")})
		if err := w.Later(finished); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err == nil {
			t.Fatal("Flush hid the failed fsync")
		}
		if err := w.Append(started); !errors.Is(err, ErrPoisoned) {
			t.Fatalf("Append after a failed Later flush: %v, want ErrPoisoned", err)
		}
	})
}
