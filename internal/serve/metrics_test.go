package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// TestMetricsText: the series as the text format writes them, counted as
// the hooks were called, histograms cumulative with _count the +Inf
// bucket.
func TestMetricsText(t *testing.T) {
	m := NewMetrics()
	sess := sessionIn(t, profiles.WorkspaceWrite)
	m.session(+1)
	start := m.callStarted()
	m.launched(start)
	res := &wire.Result{}
	res.Denials = []report.Denial{{Operation: "file-write", Source: "landlock"}, {Operation: "file-write", Source: "landlock"}, {Operation: "network", Source: "seccomp"}}
	res.Degraded = []report.Downgrade{{Feature: "netns"}}
	res.Retry = &call.RetryHint{}
	m.callFinished(start, sess, "exited", wire.Response{Result: res})
	m.callFinished(m.callStarted(), sess, "denied", wire.Response{})
	m.approval(escalate.AllowedOnce, "client")
	m.Fsynced(3 * time.Millisecond)
	var b strings.Builder
	if err := m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# TYPE sbx_calls_total counter\n",
		`sbx_calls_total{mode="workspace-write",outcome="denied"} 1` + "\n",
		`sbx_calls_total{mode="workspace-write",outcome="exited"} 1` + "\n",
		`sbx_denials_total{operation="file-write",source="landlock"} 2` + "\n",
		`sbx_denials_total{operation="network",source="seccomp"} 1` + "\n",
		`sbx_approvals_total{outcome="allowed-once",answerer="client"} 1` + "\n",
		"sbx_retries_offered_total 1\n",
		"# TYPE sbx_launch_seconds histogram\n",
		`sbx_launch_seconds_bucket{le="+Inf"} 1` + "\n",
		"sbx_launch_seconds_count 1\n",
		"sbx_call_seconds_count 2\n",
		"sbx_calls_in_flight 0\n",
		"sbx_sessions_open 1\n",
		`sbx_journal_fsync_seconds_bucket{le="0.0025"} 0` + "\n",
		`sbx_journal_fsync_seconds_bucket{le="0.005"} 1` + "\n",
		"sbx_journal_fsync_seconds_sum 0.003\n",
		`sbx_downgrades_total{feature="netns"} 1` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestMetricsNil: a server without --metrics counts nothing and pays no
// clock read.
func TestMetricsNil(t *testing.T) {
	var m *Metrics
	if start := m.callStarted(); !start.IsZero() {
		t.Errorf("callStarted without metrics read the clock: %v", start)
	}
	m.launched(time.Time{})
	m.callFinished(time.Time{}, nil, "exited", wire.Response{})
	m.approval(escalate.Rejected, "web")
	m.session(1)
	m.Fsynced(time.Millisecond)
}

// TestMetricsNoAlloc: a call's hooks allocate nothing once its label
// pairs have been seen (another engineer optimises the per-call cost).
func TestMetricsNoAlloc(t *testing.T) {
	m := NewMetrics()
	sess := sessionIn(t, profiles.ReadOnly)
	res := &wire.Result{}
	res.Denials = []report.Denial{{Operation: "file-write", Source: "landlock"}}
	resp := wire.Response{Result: res}
	m.callFinished(m.callStarted(), sess, "exited", resp)
	allocs := testing.AllocsPerRun(100, func() {
		start := m.callStarted()
		m.launched(start)
		m.callFinished(start, sess, "exited", resp)
	})
	if allocs != 0 {
		t.Errorf("a call's hooks allocate %v times", allocs)
	}
}

// TestQuoteLabel: label values escaped as the text format wants.
func TestQuoteLabel(t *testing.T) {
	if got, want := quoteLabel("a\\b\"c\nd"), `"a\\b\"c\nd"`; got != want {
		t.Errorf("quoteLabel = %s, want %s", got, want)
	}
}
