package serve

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// Metrics is the server's counters for sbx serve --metrics, written out in
// the Prometheus text exposition format (version 0.0.4) by WriteText. A nil
// *Metrics counts nothing: every hook is a no-op, so a server without
// --metrics pays one nil check per hook.
//
// It is not built on github.com/prometheus/client_golang, the official Go
// client: that package links package net (through prometheus/common/expfmt
// and prometheus/procfs), and net links cgo, which would make sbx a
// dynamically linked binary (cmd/sbx TestNoCgo; the dynamic loader costs
// every call about 0.6 ms, bench/README.md). The format is small and
// fixed; the integration test reads it with the Python client's parser.
//
// The hooks cost an atomic add, or, for a labelled series, a read-locked
// map lookup (no allocation once the label pair has been seen) and an
// atomic add. The registry is the server's own: nothing is global.
type Metrics struct {
	calls      labelled // mode, outcome
	denials    labelled // operation, source
	approvals  labelled // outcome, answerer
	downgrades labelled // feature
	retries    atomic.Uint64
	inFlight   atomic.Int64
	sessions   atomic.Int64
	launch     histogram
	call       histogram
	fsync      histogram
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		calls:      labelled{names: [2]string{"mode", "outcome"}},
		denials:    labelled{names: [2]string{"operation", "source"}},
		approvals:  labelled{names: [2]string{"outcome", "answerer"}},
		downgrades: labelled{names: [2]string{"feature"}},
		launch:     newHistogram(latencyBuckets),
		call:       newHistogram(latencyBuckets),
		fsync:      newHistogram(fsyncBuckets),
	}
}

// latencyBuckets (seconds) span a thread launch (about a millisecond)
// to a long command; fsyncBuckets a fast disk to a slow one.
var (
	latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	fsyncBuckets   = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}
)

// callStarted counts a call in flight and returns when it started (the
// zero time without metrics: no clock read).
func (m *Metrics) callStarted() time.Time {
	if m == nil {
		return time.Time{}
	}
	m.inFlight.Add(1)
	return time.Now()
}

// launched observes the launch latency: from the exec request to the
// command's dispatch (an approval's wait included).
func (m *Metrics) launched(start time.Time) {
	if m == nil {
		return
	}
	m.launch.observe(time.Since(start))
}

// callFinished counts a call that callStarted counted: its mode and
// outcome (call/finished's), its end-to-end latency, and what its report
// says: each denial by operation and source, the retry offered, each
// downgrade by feature. resp is the zero Response when the call was
// refused before it ran.
func (m *Metrics) callFinished(start time.Time, sess *session, outcome string, resp wire.Response) {
	if m == nil {
		return
	}
	sess.mu.Lock()
	mode := sess.st.Mode.String()
	sess.mu.Unlock()
	m.inFlight.Add(-1)
	m.call.observe(time.Since(start))
	m.calls.inc(mode, outcome)
	var rep *wire.CallReport
	switch {
	case resp.FS != nil:
		rep = &resp.FS.CallReport
	case resp.Result != nil:
		rep = &resp.Result.CallReport
	default:
		return
	}
	for i := range rep.Denials {
		m.denials.inc(rep.Denials[i].Operation, rep.Denials[i].Source)
	}
	for i := range rep.Degraded {
		m.downgrades.inc(string(rep.Degraded[i].Feature), "")
	}
	if rep.Retry != nil {
		m.retries.Add(1)
	}
}

// approval counts one approval's outcome and the answerer that gave it.
func (m *Metrics) approval(outcome escalate.Outcome, answerer string) {
	if m == nil {
		return
	}
	m.approvals.inc(string(outcome), answerer)
}

// session counts a session opened (+1) or closed (-1).
func (m *Metrics) session(delta int64) {
	if m == nil {
		return
	}
	m.sessions.Add(delta)
}

// Fsynced observes one journal fsync's latency (journal.Writer's OnSync).
func (m *Metrics) Fsynced(d time.Duration) {
	if m == nil {
		return
	}
	m.fsync.observe(d)
}

// WriteText writes every series in the Prometheus text format, the
// labelled ones sorted by their labels.
func (m *Metrics) WriteText(w io.Writer) error {
	var b strings.Builder
	m.calls.write(&b, "sbx_calls_total", "Calls finished, by the session's sandbox mode and the call's outcome (call/finished's).")
	m.denials.write(&b, "sbx_denials_total", "Denials in the calls' reports (one per entry of denials), by operation and source.")
	m.approvals.write(&b, "sbx_approvals_total", "Approvals asked, by outcome and the answerer that gave it.")
	writeCounter(&b, "sbx_retries_offered_total", "Calls whose report offered a retry.", m.retries.Load())
	m.launch.write(&b, "sbx_launch_seconds", "From the exec request to the command's dispatch (an approval's wait included).")
	m.call.write(&b, "sbx_call_seconds", "From the exec request to its answer.")
	writeGauge(&b, "sbx_calls_in_flight", "Calls running now.", m.inFlight.Load())
	writeGauge(&b, "sbx_sessions_open", "Sessions open now.", m.sessions.Load())
	m.fsync.write(&b, "sbx_journal_fsync_seconds", "Durations of the durable log's fsyncs (group commits).")
	m.downgrades.write(&b, "sbx_downgrades_total", "Downgrades in the calls' reports, by feature.")
	_, err := io.WriteString(w, b.String())
	return err
}

// labelled is a counter with one or two labels. names[1] empty: one label.
type labelled struct {
	names [2]string
	mu    sync.RWMutex
	m     map[[2]string]*atomic.Uint64
}

func (l *labelled) inc(a, b string) {
	k := [2]string{a, b}
	l.mu.RLock()
	c := l.m[k]
	l.mu.RUnlock()
	if c == nil {
		l.mu.Lock()
		if c = l.m[k]; c == nil {
			if l.m == nil {
				l.m = map[[2]string]*atomic.Uint64{}
			}
			c = new(atomic.Uint64)
			l.m[k] = c
		}
		l.mu.Unlock()
	}
	c.Add(1)
}

func (l *labelled) write(b *strings.Builder, name, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	l.mu.RLock()
	keys := make([][2]string, 0, len(l.m))
	for k := range l.m {
		keys = append(keys, k)
	}
	l.mu.RUnlock()
	slices.SortFunc(keys, func(x, y [2]string) int {
		if c := strings.Compare(x[0], y[0]); c != 0 {
			return c
		}
		return strings.Compare(x[1], y[1])
	})
	for _, k := range keys {
		l.mu.RLock()
		v := l.m[k].Load()
		l.mu.RUnlock()
		fmt.Fprintf(b, "%s{%s=%s", name, l.names[0], quoteLabel(k[0]))
		if l.names[1] != "" {
			fmt.Fprintf(b, ",%s=%s", l.names[1], quoteLabel(k[1]))
		}
		fmt.Fprintf(b, "} %d\n", v)
	}
}

// quoteLabel is a label value as the text format quotes it: backslash,
// double quote and line feed escaped.
func quoteLabel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func writeCounter(b *strings.Builder, name, help string, v uint64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}

func writeGauge(b *strings.Builder, name, help string, v int64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}

// histogram counts observations per bucket (not cumulative: WriteText
// sums them) with their sum in nanoseconds.
type histogram struct {
	bounds []float64 // seconds, ascending
	counts []atomic.Uint64
	sumNS  atomic.Uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	d = max(d, 0)
	s := d.Seconds()
	i := 0
	for i < len(h.bounds) && s > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNS.Add(uint64(d))
}

func (h *histogram) write(b *strings.Builder, name, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	// _count is the +Inf bucket's sum, as the format requires, not the
	// count field: a scrape racing an observation stays consistent.
	var cum uint64
	for i, bound := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(b, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(bound, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(b, "%s_sum %s\n", name, strconv.FormatFloat(float64(h.sumNS.Load())/float64(time.Second), 'g', -1, 64))
	fmt.Fprintf(b, "%s_count %d\n", name, cum)
}

// answeredBy wraps a so that the metrics learn which answerer of a
// Waterfall answered: by returns its name once the ask returned ("none"
// when none claimed the question). Without metrics a is asked as it is.
func (m *Metrics) answeredBy(a Answerer) (Answerer, func() string) {
	w, ok := a.(Waterfall)
	if m == nil || !ok {
		name := answererLabel(a)
		return a, func() string { return name }
	}
	var by atomic.Pointer[string]
	none := "none"
	by.Store(&none)
	return escalate.ApproverFunc(func(ctx context.Context, q escalate.ApprovalRequest) (escalate.Outcome, error) {
		c := w.claimer(q)
		if c == nil {
			return escalate.Unavailable, nil
		}
		name := answererLabel(c)
		by.Store(&name)
		return c.Approve(ctx, q)
	}), func() string { return *by.Load() }
}

// answererLabel is an answerer's name as --answerers spells it.
func answererLabel(a Answerer) string {
	switch a.(type) {
	case *ClientAnswerer:
		return "client"
	case *WebAnswerer:
		return "web"
	case TerminalAnswerer:
		return "terminal"
	case Always:
		return "approver"
	case *ACPAnswerer:
		return "acp"
	case nil:
		return "none"
	}
	return "other"
}
