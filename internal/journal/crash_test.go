//go:build unix

package journal

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashEnv carries a crash helper's orders: "DIR N POINT SEQ CUT".
const crashEnv = "SBX_JOURNAL_CRASH_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crashHelper(spec)
	}
	os.Exit(m.Run())
}

// crashHelper is the test binary re-executed: it appends records 1..N to
// session "s" in DIR, writes each acknowledged seq to fd 3 before the next
// Append, and kills itself with SIGKILL at POINT of the Append of record
// SEQ (at faultPartialWrite after CUT bytes of its frame, CUT modulo the
// frame's size). With G > 0, G goroutines append at once instead (group
// commit), each acknowledging the seqs it got, and the kill comes in the
// first flush whose last record is SEQ or later.
func crashHelper(spec string) {
	var dir string
	var n, point, seq, cut, g int
	if _, err := fmt.Sscanf(spec, "%s %d %d %d %d %d", &dir, &n, &point, &seq, &cut, &g); err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		os.Exit(2)
	}
	hits := func(s uint64) bool { return s == uint64(seq) || (g > 0 && s >= uint64(seq)) }
	acks := os.NewFile(3, "acks")
	setFaults(func(p faultPoint, s uint64) {
		if p == faultPoint(point) && hits(s) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}, func(s uint64, size int) int {
		if faultPoint(point) == faultPartialWrite && hits(s) {
			return cut % size
		}
		return -1
	})
	w, err := Open(dir, "s")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		os.Exit(2)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		os.Exit(2)
	}
	if g == 0 {
		for i := 1; i <= n; i++ {
			if err := w.Append(crashRecord(i)); err != nil {
				fail(err)
			}
			fmt.Fprintf(acks, "%d\n", i)
		}
		os.Exit(0)
	}
	if err := w.Append(crashRecord(1)); err != nil {
		fail(err)
	}
	fmt.Fprintf(acks, "1\n")
	var mu sync.Mutex
	for j := 0; j < g; j++ {
		go func() {
			for i := 0; ; i++ {
				r, err := w.Log(Record{Type: TypeCallStarted, Data: []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, j, i))})
				if err != nil {
					fail(err)
				}
				mu.Lock()
				fmt.Fprintf(acks, "%d\n", r.Seq)
				mu.Unlock()
			}
		}()
	}
	select {}
}

// crashRecord is record i of a crash helper; its size varies with i.
func crashRecord(i int) Record {
	typ := TypeCallStarted
	if i == 1 {
		typ = TypeSessionOpened
	}
	return Record{Type: typ, Time: t0, Data: []byte(fmt.Sprintf(`{"i":%d,"pad":"%0*d"}`, i, i*7%23, 0))}
}

// crashCase is one kill: at point of the append of record seq.
type crashCase struct {
	point      faultPoint
	seq        int
	cut        int
	goroutines int // 0: one record at a time
}

// TestCrash kills a writer process with SIGKILL at each point of each
// record's append (before the write, after the write, after the fsync) and
// at 100 random bytes inside frames, then checks: the acknowledged records
// are exactly 1..SEQ-1; replay gives exactly those, plus record SEQ when
// its frame was whole when the process died (written, not yet
// acknowledged); a partial frame is a torn tail, dropped and reported,
// never a record; and Open then appends after the recovered records.
func TestCrash(t *testing.T) {
	const n = 6
	var cases []crashCase
	for seq := 1; seq <= n; seq++ {
		for _, p := range []faultPoint{faultBeforeWrite, faultAfterWrite, faultAfterSync} {
			cases = append(cases, crashCase{p, seq, 0, 0})
		}
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := 0; i < 100; i++ {
		cases = append(cases, crashCase{faultPartialWrite, 1 + rng.IntN(n), rng.IntN(1 << 20), 0})
	}
	for _, c := range cases {
		name := fmt.Sprintf("point%d-seq%d-cut%d", c.point, c.seq, c.cut)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			acked := runCrashHelper(t, dir, n, c)
			for i, a := range acked {
				if a != i+1 {
					t.Fatalf("acks %v (seed %d)", acked, seed)
				}
			}
			if len(acked) != c.seq-1 {
				t.Fatalf("%d acks, want %d: the helper did not die where told (seed %d)", len(acked), c.seq-1, seed)
			}
			whole := c.point == faultAfterWrite || c.point == faultAfterSync
			size := len(frameOf(t, sealed(crashRecord(c.seq), c.seq)))
			torn := c.point == faultPartialWrite && c.cut%size != 0
			s, ps := replayOne(t, dir)
			want := len(acked)
			if whole {
				want++
			}
			if len(s.Records) != want {
				t.Fatalf("replay gave %d records, want %d (acked %d); problems %v (seed %d)", len(s.Records), want, len(acked), ps, seed)
			}
			for i, r := range s.Records {
				w := sealed(crashRecord(i+1), i+1)
				if d := sameRecords([]Record{r}, []Record{w}); d != "" {
					t.Fatalf("record %d: %s (seed %d)", i+1, d, seed)
				}
			}
			switch {
			case torn && (len(ps) != 1 || ps[0].Kind != ProblemTorn || ps[0].Effect != EffectDropped):
				t.Fatalf("problems %v, want one torn tail (seed %d)", ps, seed)
			case !torn && len(ps) != 0:
				t.Fatalf("problems %v, want none (seed %d)", ps, seed)
			}
			// The server's restart: Open cuts the torn tail, appends go on.
			w, err := Open(dir, "s")
			if err != nil {
				t.Fatal(err)
			}
			next := Record{Type: TypeCallFinished}
			if want == 0 {
				next.Type = TypeSessionOpened
			}
			r, err := w.Log(next)
			w.Close()
			if err != nil || r.Seq != uint64(want+1) {
				t.Fatalf("append after the crash: %+v, %v; want seq %d", r, err, want+1)
			}
			s, ps = replayOne(t, dir)
			if len(ps) != 0 || len(s.Records) != want+1 {
				t.Fatalf("after reopening: %d records, problems %v", len(s.Records), ps)
			}
		})
	}
}

// sealed is crashRecord i as the Writer stores it.
func sealed(r Record, i int) Record {
	r.SessionID, r.Seq = "s", uint64(i)
	return r
}

// runCrashHelper runs the helper until it dies and returns the seqs it
// acknowledged. The helper must die of SIGKILL.
func runCrashHelper(t *testing.T, dir string, n int, c crashCase) []int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d %d %d", crashEnv, dir, n, c.point, c.seq, c.cut, c.goroutines))
	cmd.ExtraFiles = []*os.File{w}
	var stderr bufferString
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var acked []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		a, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("ack %q", sc.Text())
		}
		acked = append(acked, a)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper: %v, want killed; stderr: %s", err, stderr)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper: %v, want killed by SIGKILL; stderr: %s", err, stderr)
	}
	return acked
}

type bufferString struct{ b []byte }

func (s *bufferString) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *bufferString) String() string              { return string(s.b) }

// TestCrashGroupCommit kills a writer whose 8 goroutines append at once, in
// the middle of a flush of several records (group commit) or right after
// its fsync: every acknowledged record is in the replay, the replay is a
// gap-free prefix, and a flush cut short is one torn tail, never a record.
func TestCrashGroupCommit(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 30; i++ {
		c := crashCase{faultPartialWrite, 20 + rng.IntN(200), rng.IntN(1 << 20), 8}
		if i%3 == 0 {
			c.point = faultAfterSync
		}
		t.Run(fmt.Sprintf("point%d-seq%d-cut%d", c.point, c.seq, c.cut), func(t *testing.T) {
			dir := t.TempDir()
			acked := runCrashHelper(t, dir, 0, c)
			s, ps := replayOne(t, dir)
			if len(ps) > 1 || (len(ps) == 1 && (ps[0].Kind != ProblemTorn || ps[0].Effect != EffectDropped)) {
				t.Fatalf("problems %v, want at most one torn tail (seed %d)", ps, seed)
			}
			if c.point == faultAfterSync && len(ps) != 0 {
				t.Fatalf("problems %v after a whole fsync (seed %d)", ps, seed)
			}
			got := map[uint64]bool{}
			for i, r := range s.Records {
				if r.Seq != uint64(i+1) {
					t.Fatalf("record %d has seq %d", i, r.Seq)
				}
				got[r.Seq] = true
			}
			if slices.ContainsFunc(acked, func(a int) bool { return !got[uint64(a)] }) {
				t.Fatalf("an acknowledged record is missing: acked %v, replayed %d (seed %d)", acked, len(s.Records), seed)
			}
			if len(acked) == 0 || len(s.Records) == 0 {
				t.Fatalf("acked %v, replayed %d: the helper died before appending", acked, len(s.Records))
			}
		})
	}
}
