package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrPoisoned matches the error of every Append after a write or fsync
// failed: the file may end in a half-written record, and a record appended
// after it would be unreadable (replay stops at damage in the middle).
var ErrPoisoned = errors.New("an earlier write failed, the writer appends nothing more")

// ErrLocked matches the error of Open when another Writer has the log.
var ErrLocked = errors.New("the log is locked")

// ErrUnsafeDir matches the error of CheckDir: a state directory others
// could write.
var ErrUnsafeDir = errors.New("unsafe state directory")

// ErrClosed matches the error of Append after Close.
var ErrClosed = errors.New("writer closed")

// syncFile is what a Writer needs of its file (a test swaps in one that
// fails).
type syncFile interface {
	io.Writer
	Sync() error
	Close() error
}

// Writer appends the records of one session to its log. It is safe for
// concurrent use: records are numbered in the order their Appends take the
// lock, and Appends that come while an fsync runs are written together and
// share the next fsync (group commit), so that calls in flight at once do
// not queue behind one fsync each. Each Append still returns only once its
// own record is on disk.
type Writer struct {
	mu      sync.Mutex
	flushed *sync.Cond // broadcast when a flush ends
	id      string
	path    string
	f       syncFile
	st      *State
	err     error // the failure that poisoned the writer
	closed  bool
	dropped []Problem

	queued    []byte // frames checked and numbered, not yet written
	queuedSeq uint64 // Seq of the last queued frame
	durable   uint64 // Seq of the last frame written and fsynced
	flushing  bool
	// later is armed while a record of Later waits in queued with no
	// Append or Queue to flush it: it flushes after LaterDelay.
	later      *time.Timer
	laterArmed bool

	// OnSync, when set (before the first Append), is told how long each
	// group commit's fsync took: sbx serve --metrics's
	// sbx_journal_fsync_seconds.
	OnSync func(time.Duration)
}

// LaterDelay is the longest a record of Later waits for the next group
// commit before it is flushed on its own: long enough that a call's
// call/started that follows its previous call/finished at once shares
// its fsync, short enough that the window in which a crash loses a
// finished record stays small.
var LaterDelay = 20 * time.Millisecond

// Open opens the log of session sessionID in dir for appending: the file
// SESSION_ID.log, created 0600 in a directory created 0700 (an existing
// directory keeps its mode), never through a symbolic link, and locked
// (flock) so that a second Writer of the session, in this process or
// another, is refused instead of interleaving its records. An existing log
// is replayed first, so that appends continue its Seq and its rules: a
// dropped tail (a torn or corrupt last record) is cut off, kept in
// SESSION_ID.log.dropped-OFFSET and listed by Dropped; a log damaged
// before its end is refused (records appended after the damage would lie
// where replay never reaches).
func Open(dir, sessionID string) (*Writer, error) {
	if err := ValidateSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("journal: open: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: open: %w", err)
	}
	path := filepath.Join(dir, sessionID+logSuffix)
	f, err := openNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: open: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	w, err := resume(f, dir, path, sessionID)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	return w, nil
}

// resume replays the log open in f and makes its Writer.
func resume(f *os.File, dir, path, id string) (*Writer, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	data := make([]byte, st.Size())
	if n, err := f.ReadAt(data, 0); err != nil && n != len(data) {
		return nil, fmt.Errorf("read: %w", err)
	}
	r := replayData(path, id, data)
	if r.stopped {
		p := r.problems[len(r.problems)-1]
		return nil, fmt.Errorf("the log is damaged at offset %d (%s: %s): refusing to append after it (see sbx log verify)", p.Offset, p.Kind, p.Reason)
	}
	w := &Writer{id: id, path: path, f: f, st: r.state, durable: r.state.next - 1}
	w.flushed = sync.NewCond(&w.mu)
	if r.end < int64(len(data)) {
		// The dropped bytes are kept beside the log before they are cut
		// off: a corrupt last record may be an acknowledged one that rotted,
		// and an audit trail does not silently lose evidence.
		saved, err := saveTail(path, r.end, data[r.end:])
		if err != nil {
			return nil, fmt.Errorf("keep the dropped tail: %w", err)
		}
		if err := f.Truncate(r.end); err != nil {
			return nil, fmt.Errorf("cut the dropped tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("fsync: %w", err)
		}
		for _, p := range r.problems {
			if p.Effect == EffectDropped {
				p.Reason += "; the bytes are kept in " + saved
				w.dropped = append(w.dropped, p)
			}
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("fsync %s: %w", dir, err)
	}
	return w, nil
}

// saveTail writes tail, found at offset off of the log path, to
// PATH.dropped-OFF (a name Replay does not read) and returns that name.
func saveTail(path string, off int64, tail []byte) (string, error) {
	name := fmt.Sprintf("%s.dropped-%d", path, off)
	f, err := openNoFollow(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(tail)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return name, err
}

// Dropped lists what Open cut off the end of the log (a torn or corrupt
// last record), so that the server can report it; Replay reports it too.
func (w *Writer) Dropped() []Problem { return w.dropped }

// Append appends rec and returns once it is on disk (written and fsynced):
// only then may its effect be acted on or acknowledged. Append fills in
// what rec leaves zero: SessionID (the writer's), Seq (the next) and Time
// (now, UTC); a value given must be right. It refuses, writing nothing, a
// record replay would not accept (an unknown type, an approval/decided of
// no pending approval, ... see the Type
// constants). After a failed write or fsync
// the writer is poisoned: that Append and every later one fail (ErrPoisoned).
func (w *Writer) Append(rec Record) error {
	_, err := w.Log(rec)
	return err
}

// Log is Append that returns the record exactly as replay will return it
// (with its Seq, SessionID and Time).
func (w *Writer) Log(rec Record) (Record, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	back, err := w.enqueue(rec)
	if err != nil {
		return Record{}, err
	}
	if err := w.awaitLocked(back); err != nil {
		return Record{}, err
	}
	return back, nil
}

// Queue takes rec's place in the log at once, as Append would, and makes
// it durable in the background: every record appended after Queue
// returned comes after it. durable returns once rec is on disk (or with
// the error Append would have returned); until then its effect must not be
// acted on. A caller overlaps the fsync with work that only prepares the
// effect (a server resolves a call while its call/started is written).
// An error from Queue itself is a record refused, nothing written.
func (w *Writer) Queue(rec Record) (durable func() error, err error) {
	w.mu.Lock()
	back, err := w.enqueue(rec)
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var result error
	go func() {
		w.mu.Lock()
		result = w.awaitLocked(back)
		w.mu.Unlock()
		close(done)
	}()
	return func() error {
		<-done
		return result
	}, nil
}

// Later takes rec's place in the log at once, as Append would, and
// returns without waiting for it to be on disk: it is written by the next
// flush (the group commit of the next Append or Queue), at the latest
// LaterDelay after, or by Close. It is for records written after the
// fact, whose effect has happened already and that gate nothing (a
// call's call/finished): a crash before that flush loses the record, and
// replay sees the call started and not finished. A record refused returns
// an error, as from Append; a failed write of it poisons the writer, so
// the next Append fails (ErrPoisoned).
func (w *Writer) Later(rec Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.enqueue(rec); err != nil {
		return err
	}
	if !w.laterArmed {
		w.laterArmed = true
		if w.later == nil {
			w.later = time.AfterFunc(LaterDelay, w.flushLater)
		} else {
			w.later.Reset(LaterDelay)
		}
	}
	return nil
}

// flushLater flushes what Later queued when no flush took it meanwhile.
func (w *Writer) flushLater() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.laterArmed = false
	w.drainLocked()
}

// drainLocked returns once nothing queued waits for a flush (or the writer
// is poisoned); w.mu is held.
func (w *Writer) drainLocked() {
	for w.flushing || (len(w.queued) > 0 && w.err == nil) {
		if w.flushing {
			w.flushed.Wait()
			continue
		}
		w.flush()
	}
}

// enqueue checks rec, fills in what it leaves zero, applies it to the
// state and queues its frame; w.mu is held. The Append doc says what is
// filled in and refused.
func (w *Writer) enqueue(rec Record) (Record, error) {
	switch {
	case w.closed:
		return Record{}, fmt.Errorf("journal: append to %s: %w", w.path, ErrClosed)
	case w.err != nil:
		return Record{}, fmt.Errorf("journal: append to %s: %w (it failed with: %v)", w.path, ErrPoisoned, w.err)
	}
	if rec.SessionID == "" {
		rec.SessionID = w.id
	}
	if rec.Seq == 0 {
		rec.Seq = w.st.next
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	payload, back, err := encodeRecord(rec)
	if err != nil {
		return Record{}, fmt.Errorf("journal: append %s to %s: %w", rec.Type, w.path, err)
	}
	if len(payload) > MaxRecordSize {
		return Record{}, fmt.Errorf("journal: append %s to %s: record of %d bytes, over the limit %d", rec.Type, w.path, len(payload), MaxRecordSize)
	}
	// Applied before it is durable: the next Append is checked against it.
	// Should its write fail, the writer is poisoned and its state unused.
	// A record only a server would refuse (State.Apply) is the server's
	// own to judge: the log takes it, as replay does.
	rerr := w.st.place(back)
	if rerr == nil {
		rerr = w.st.step(back)
	}
	if rerr != nil && rerr.level != levelServer {
		return Record{}, fmt.Errorf("journal: append %s to %s: %w", rec.Type, w.path, rerr)
	}
	w.queued = append(w.queued, encodeFrame(payload)...)
	w.queuedSeq = back.Seq
	return back, nil
}

// awaitLocked returns once the queued record back is durable, flushing
// the queue when no flush runs; w.mu is held.
func (w *Writer) awaitLocked(back Record) error {
	for {
		switch {
		case w.durable >= back.Seq:
			return nil
		case w.err != nil:
			return fmt.Errorf("journal: append %s to %s: %w", back.Type, w.path, w.err)
		case !w.flushing:
			w.flush()
		default:
			w.flushed.Wait()
		}
	}
}

// flush writes and fsyncs every queued frame, with w.mu held on entry and
// exit but not while it writes, so that more Appends queue meanwhile.
func (w *Writer) flush() {
	buf, last := w.queued, w.queuedSeq
	w.queued, w.flushing = nil, true
	w.mu.Unlock()
	err := w.write(buf, last)
	w.mu.Lock()
	w.flushing = false
	if err != nil {
		w.err = err
	} else {
		w.durable = last
	}
	w.flushed.Broadcast()
}

// write writes frames (whose last record is seq) and fsyncs them,
// stopping at the fault points a test set.
func (w *Writer) write(frame []byte, seq uint64) error {
	faults.at(faultBeforeWrite, seq)
	rest := frame
	if faults.cut != nil {
		if n := faults.cut(seq, len(frame)); n >= 0 && n < len(frame) {
			if _, err := w.f.Write(frame[:n]); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			faults.at(faultPartialWrite, seq)
			rest = frame[n:]
		}
	}
	if n, err := w.f.Write(rest); err != nil || n != len(rest) {
		if err == nil {
			err = io.ErrShortWrite
		}
		return fmt.Errorf("write: %w", err)
	}
	faults.at(faultAfterWrite, seq)
	synced := time.Now()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	if w.OnSync != nil {
		w.OnSync(time.Since(synced))
	}
	faults.at(faultAfterSync, seq)
	return nil
}

// Flush returns once every record taken so far (Later's too) is on disk,
// or with the error that poisoned the writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked()
	if w.err != nil {
		return fmt.Errorf("journal: flush %s: %w", w.path, w.err)
	}
	return nil
}

// Close closes the log once the Appends under way have returned and the
// records of Later are written (all are on disk then); Close of a closed
// Writer does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true // no new Append starts
	// Records of Later may wait for no Append: flush them here.
	w.drainLocked()
	if w.later != nil {
		w.later.Stop()
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("journal: close %s: %w", w.path, err)
	}
	return nil
}

// faultPoint is a point of an append where a test may stop the process.
type faultPoint int

const (
	faultBeforeWrite  faultPoint = iota // nothing of the record written
	faultPartialWrite                   // the first cut(seq) bytes written
	faultAfterWrite                     // all written, not fsynced
	faultAfterSync                      // on disk, Append not returned
)

// faults is the fault-injection hook, set only by tests (export_test.go):
// hit is called at each point of a flush with the Seq of the flush's last
// record (the crash test's kills the process there); cut says how many of
// the size bytes of the flush to write before faultPartialWrite (-1: all).
var faults faultHooks

type faultHooks struct {
	hit func(p faultPoint, seq uint64)
	cut func(seq uint64, size int) int
}

func (h faultHooks) at(p faultPoint, seq uint64) {
	if h.hit != nil {
		h.hit(p, seq)
	}
}
