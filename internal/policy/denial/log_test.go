package denial

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/report"
)

func TestLogDeduplicates(t *testing.T) {
	l := NewLog(DefaultCap)
	w := report.Denial{Operation: "write", Path: "/etc/x", PID: 1, Source: "s", Confidence: "observed"}
	for i := range 100000 {
		w.PID = i + 1
		l.Add(w)
	}
	l.Add(report.Denial{Operation: "create", Path: "/etc/x"})
	l.Add(report.Denial{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.2", Port: 80}})
	l.Add(report.Denial{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.2", Port: 81}})
	l.Add(report.Denial{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.2", Port: 80}, Count: 2})
	got, dropped := l.Denials()
	if dropped != 0 || len(got) != 4 {
		t.Fatalf("got %d entries, %d dropped: %+v", len(got), dropped, got)
	}
	if got[0].Count != 100000 || got[0].PID != 1 {
		t.Errorf("write: count %d, pid %d; want 100000 and the first pid", got[0].Count, got[0].PID)
	}
	if got[1].Operation != "create" || got[1].Count != 1 {
		t.Errorf("create: %+v", got[1])
	}
	if got[2].Count != 3 || got[3].Count != 1 {
		t.Errorf("connect counts: %d and %d, want 3 and 1", got[2].Count, got[3].Count)
	}
}

func TestLogCap(t *testing.T) {
	l := NewLog(3)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25000 {
				l.Add(report.Denial{Operation: "create", Path: fmt.Sprintf("/etc/f%d-%d", g, i%1000)})
			}
		}()
	}
	wg.Wait()
	got, dropped := l.Denials()
	if len(got) != 3 {
		t.Fatalf("got %d entries, want the cap of 3", len(got))
	}
	total := dropped
	for _, d := range got {
		total += d.Count
	}
	if total != 100000 {
		t.Errorf("listed counts + dropped = %d, want every one of the 100000 events", total)
	}
	got[0].Count = -1
	if again, _ := l.Denials(); again[0].Count == -1 {
		t.Error("Denials returns the log's own slice")
	}
	if NewLog(0).cap != 1 {
		t.Error("NewLog(0) does not keep at least one entry")
	}
}
