package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenBadSessionID: an id that is no safe file name is refused, and
// nothing is created.
func TestOpenBadSessionID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, ".hidden", "a\x00b", "a b", "é", strings.Repeat("a", MaxSessionIDLen+1)} {
		dir := filepath.Join(t.TempDir(), "state")
		w, err := Open(dir, id)
		if err == nil {
			w.Close()
			t.Errorf("Open(%q) succeeded", id)
			continue
		}
		if !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Open(%q): %v, want ErrBadSessionID", id, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Open(%q) created %s", id, dir)
		}
	}
	for _, id := range []string{"a", "s-1", "019a.b_C", strings.Repeat("a", MaxSessionIDLen)} {
		if err := ValidateSessionID(id); err != nil {
			t.Errorf("ValidateSessionID(%q): %v", id, err)
		}
	}
}

// TestOpenModes: the directory is created 0700 and the file 0600.
func TestOpenModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	dir := filepath.Join(t.TempDir(), "a", "state")
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "s.log"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), want)
		}
	}
}

// TestOpenRefusesLink: a symbolic link in the log's place is not followed.
func TestOpenRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, "s.log")); err != nil {
		t.Skip(err)
	}
	if w, err := Open(dir, "s"); err == nil {
		w.Close()
		t.Fatal("Open followed a symbolic link")
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target was created")
	}
}

// TestAppendRoundTrip: what Append writes, Replay reads back, with Seq,
// SessionID and Time filled in; Log returns the record as replay does.
func TestAppendRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	var want []Record
	for _, r := range basic("s") {
		r.Seq, r.SessionID = 0, ""
		got, err := w.Log(r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, ps := replayOne(t, dir)
	if len(ps) != 0 {
		t.Fatalf("problems %v", ps)
	}
	if d := sameRecords(s.Records, want); d != "" {
		t.Fatal(d)
	}
	if s.Records[6].Seq != 7 || s.Records[6].SessionID != "s" {
		t.Errorf("last record %+v", s.Records[6])
	}
	if err := w.Append(rec("s", 0, TypeCallStarted, "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	// Reopened, the log goes on where it ended.
	w, err = Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Log(Record{Type: TypeCallStarted})
	if err != nil || r.Seq != 8 {
		t.Fatalf("Log after reopening: %+v, %v; want seq 8", r, err)
	}
	w.Close()
}

// TestAppendRefuses: a record replay would not accept is not written, and
// the writer goes on.
func TestAppendRefuses(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(Record{Type: TypeTurnBegun, Data: []byte(`{"turn_id":"t"}`)}); err == nil || !strings.Contains(err.Error(), "not session/opened") {
		t.Errorf("a first record that is not session/opened: %v", err)
	}
	if err := w.Append(Record{Type: TypeSessionOpened}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Type: TypeApprovalDecided, Data: []byte(`{"approval_id":"a1","outcome":"allowed-once"}`)},
		{Type: "nonsense"},
		{Type: TypeCallStarted, SessionID: "other"},
		{Type: TypeCallStarted, Seq: 5},
		{Type: TypeCallStarted, Data: []byte(`{"a":1,"a":2}`)},
		{Type: TypeCallStarted, Data: []byte(`{"a":`)},
		{Type: TypeCallStarted, Data: []byte(`{"big":"` + strings.Repeat("x", MaxRecordSize) + `"}`)},
	} {
		if err := w.Append(r); err == nil {
			t.Errorf("Append(%.200q) succeeded", fmt.Sprintf("%+v", r))
		}
	}
	if err := w.Append(Record{Type: TypeCallStarted}); err != nil {
		t.Fatalf("Append after refusals: %v", err)
	}
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != 2 || s.Records[1].Seq != 2 {
		t.Fatalf("%+v, problems %v; want 2 records", s, ps)
	}
}

// failingFile writes at most budget bytes, then fails; its Sync fails when
// syncErr is set.
type failingFile struct {
	f       *os.File
	budget  int
	syncErr error
	writes  int
}

func (f *failingFile) Write(b []byte) (int, error) {
	f.writes++
	if len(b) > f.budget {
		n, _ := f.f.Write(b[:f.budget])
		f.budget = 0
		return n, errors.New("no space left (test)")
	}
	f.budget -= len(b)
	return f.f.Write(b)
}

func (f *failingFile) Sync() error {
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.f.Sync()
}

func (f *failingFile) Close() error { return f.f.Close() }

// openedLog opens a session's log in a new directory (closed with the
// test), appends its session/opened, and opens the file for appending, for
// a test to put behind the writer (setFile) a file that fails or waits.
func openedLog(t *testing.T) (dir string, w *Writer, f *os.File) {
	t.Helper()
	dir = t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Append(Record{Type: TypeSessionOpened}); err != nil {
		t.Fatal(err)
	}
	f, err = os.OpenFile(filepath.Join(dir, "s.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	return dir, w, f
}

// TestPoisoned: after a failed write (half a record on disk) or a failed
// fsync, every later Append fails and writes nothing; replay sees the
// records before, and the half record as a torn tail.
func TestPoisoned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  int
		syncErr error
	}{
		{"short-write", 10, nil},
		{"fsync", 1 << 20, errors.New("EIO (test)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w, f := openedLog(t)
			ff := &failingFile{f: f, budget: tc.budget, syncErr: tc.syncErr}
			w.setFile(ff)
			if err := w.Append(Record{Type: TypeCallStarted}); err == nil {
				t.Fatal("the failing Append succeeded")
			}
			writes := ff.writes
			ff.budget, ff.syncErr = 1<<20, nil // the file works again; the writer must not
			for i := 0; i < 3; i++ {
				if err := w.Append(Record{Type: TypeCallFinished}); !errors.Is(err, ErrPoisoned) {
					t.Fatalf("Append after the failure: %v, want ErrPoisoned", err)
				}
			}
			if ff.writes != writes {
				t.Fatalf("a poisoned writer wrote %d more times", ff.writes-writes)
			}
			s, ps := replayOne(t, dir)
			wantRecs, wantProblems := 2, 0 // fsync failed, but the page cache kept the record
			if tc.syncErr == nil {
				wantRecs, wantProblems = 1, 1
			}
			if len(s.Records) != wantRecs || len(ps) != wantProblems {
				t.Fatalf("%d records, problems %v; want %d, %d", len(s.Records), ps, wantRecs, wantProblems)
			}
		})
	}
}

// TestReopenCutsTornTail: Open cuts a torn last record off (and says so),
// so that what is appended next is read by replay.
func TestReopenCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	p := writeLog(t, dir, "s", basic("s")...)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, data[:len(data)-3], 0o600)
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if d := w.Dropped(); len(d) != 1 || d[0].Kind != ProblemTorn || !strings.Contains(d[0].Reason, "kept in "+p+".dropped-") {
		t.Errorf("Dropped = %v, want the torn record, kept", d)
	}
	kept, err := os.ReadFile(fmt.Sprintf("%s.dropped-%d", p, w.Dropped()[0].Offset))
	if want := data[w.Dropped()[0].Offset : len(data)-3]; err != nil || string(kept) != string(want) {
		t.Errorf("kept tail %q, %v; want %q", kept, err, want)
	}
	r, err := w.Log(Record{Type: TypeCallStarted})
	if err != nil || r.Seq != 7 {
		t.Fatalf("Log = %+v, %v; want seq 7 (the torn 7 was never acknowledged)", r, err)
	}
	w.Close()
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != 7 || s.Records[6].Type != TypeCallStarted {
		t.Fatalf("%d records, problems %v; want 7 and none", len(s.Records), ps)
	}
}

// TestOpenRefusesDamage: a log damaged before its end is not appended to.
func TestOpenRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	p := writeLog(t, dir, "s", basic("s")...)
	data, _ := os.ReadFile(p)
	data[30] ^= 0xff // inside the first record's payload
	os.WriteFile(p, data, 0o600)
	w, err := Open(dir, "s")
	if err == nil {
		w.Close()
		t.Fatal("Open of a damaged log succeeded")
	}
	if !strings.Contains(err.Error(), "offset 0") || !strings.Contains(err.Error(), "refusing to append") {
		t.Errorf("error %q", err)
	}
	if after, _ := os.ReadFile(p); string(after) != string(data) {
		t.Error("Open changed the damaged log")
	}
}

// TestConcurrentAppends: appends from many goroutines each land once, in
// one gap-free sequence.
func TestConcurrentAppends(t *testing.T) {
	const goroutines, each = 32, 20
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Record{Type: TypeSessionOpened}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				errs <- w.Append(Record{Type: TypeCallStarted, Data: []byte(fmt.Sprintf(`{"call_id":"%d-%d"}`, g, i))})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != 1+goroutines*each {
		t.Fatalf("%d records, problems %v", len(s.Records), ps)
	}
	seen := map[string]bool{}
	for i, r := range s.Records {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		seen[string(r.Data)] = true
	}
	if len(seen) != 1+goroutines*each {
		t.Fatalf("%d distinct records", len(seen))
	}
}

// BenchmarkAppend measures one durable append (write + fsync) here.
func BenchmarkAppend(b *testing.B) {
	w, err := Open(b.TempDir(), "s")
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.Append(Record{Type: TypeSessionOpened})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Append(Record{Type: TypeCallStarted, Data: []byte(`{"call_id":"c"}`)}); err != nil {
			b.Fatal(err)
		}
	}
}

// slowSync is a file whose fsync takes a while and is counted.
type slowSync struct {
	*os.File
	mu    sync.Mutex
	syncs int
}

func (f *slowSync) Sync() error {
	f.mu.Lock()
	f.syncs++
	f.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	return f.File.Sync()
}

// TestGroupCommit: Appends that come while an fsync runs share the next
// one, and each still returns only once its record is on disk.
func TestGroupCommit(t *testing.T) {
	const goroutines, each = 32, 5
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Record{Type: TypeSessionOpened}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "s.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	sf := &slowSync{File: f}
	w.setFile(sf)
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := w.Log(Record{Type: TypeCallStarted})
				if err != nil {
					t.Error(err)
					return
				}
				// Durable before return: replay of the file has it now.
				data, _ := os.ReadFile(filepath.Join(dir, "s.log"))
				if r2 := replayData("s.log", "s", data); uint64(len(r2.session.Records)) < r.Seq {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	w.Close()
	if bad.Load() > 0 {
		t.Fatalf("%d Appends returned before their record was written", bad.Load())
	}
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != 1+goroutines*each {
		t.Fatalf("%d records, problems %v", len(s.Records), ps)
	}
	if sf.syncs >= goroutines*each/2 {
		t.Fatalf("%d fsyncs for %d concurrent Appends: no group commit", sf.syncs, goroutines*each)
	}
	t.Logf("%d fsyncs for %d Appends", sf.syncs, goroutines*each)
}

// TestCloseWaitsForAppends: Close during Appends lets them finish; later
// ones fail with ErrClosed.
func TestCloseWaitsForAppends(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	w.Append(Record{Type: TypeSessionOpened})
	var wg sync.WaitGroup
	var ok atomic.Int32
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := w.Append(Record{Type: TypeCallStarted})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				ok.Add(1)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != 1+int(ok.Load()) {
		t.Fatalf("%d records for %d acknowledged Appends, problems %v", len(s.Records), 1+ok.Load(), ps)
	}
}

// TestOpenLocked: a second Writer of a session is refused while the first
// is open, in this process too; after Close the log opens again.
func TestOpenLocked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if w2, err := Open(dir, "s"); !errors.Is(err, ErrLocked) {
		if err == nil {
			w2.Close()
		}
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	w.Close()
	w, err = Open(dir, "s")
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	w.Close()
}

// BenchmarkAppendParallel measures durable appends from many goroutines at
// once (group commit shares the fsyncs).
func BenchmarkAppendParallel(b *testing.B) {
	w, err := Open(b.TempDir(), "s")
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.Append(Record{Type: TypeSessionOpened})
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Append(Record{Type: TypeCallStarted, Data: []byte(`{"call_id":"c"}`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gatedSync holds each Sync until the test opens the gate.
type gatedSync struct {
	*os.File
	gate chan struct{}
	err  error
}

func (f *gatedSync) Sync() error {
	<-f.gate
	if f.err != nil {
		return f.err
	}
	return f.File.Sync()
}

// TestQueue: Queue orders its record at once, before every record
// appended after it, and durable returns only once that record is on
// disk, or with the failure that poisoned the writer.
func TestQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		syncErr error
	}{{"durable", nil}, {"fsync-fails", errors.New("EIO (test)")}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, w, f := openedLog(t)
			gs := &gatedSync{File: f, gate: make(chan struct{}), err: tc.syncErr}
			w.setFile(gs)
			durable, err := w.Queue(Record{Type: TypeCallStarted, Data: []byte(`{"call_id":"c1"}`)})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { got <- durable() }()
			select {
			case err := <-got:
				t.Fatalf("durable returned (%v) before the fsync ended", err)
			case <-time.After(50 * time.Millisecond):
			}
			// Appended after Queue returned: after it in the log, and
			// durable no sooner.
			after := make(chan error, 1)
			go func() { after <- w.Append(Record{Type: TypeCallFinished, Data: []byte(`{"call_id":"c1"}`)}) }()
			close(gs.gate)
			err = <-got
			if aerr := <-after; tc.syncErr == nil && aerr != nil {
				t.Fatal(aerr)
			}
			if durable() != err {
				t.Errorf("a second durable() returned another answer")
			}
			if tc.syncErr != nil {
				if err == nil || !strings.Contains(err.Error(), "EIO (test)") {
					t.Fatalf("durable: %v, want the fsync's failure", err)
				}
				if _, err := w.Queue(Record{Type: TypeCallStarted}); !errors.Is(err, ErrPoisoned) {
					t.Fatalf("Queue after the failure: %v, want ErrPoisoned", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, ps := replayOne(t, dir)
			if len(ps) != 0 || len(s.Records) != 3 || s.Records[1].Type != TypeCallStarted || s.Records[2].Type != TypeCallFinished {
				t.Fatalf("records %+v, problems %v: want opened, started, finished", s.Records, ps)
			}
		})
	}
}
