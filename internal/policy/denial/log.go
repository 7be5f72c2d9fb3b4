package denial

import (
	"strconv"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// DefaultCap is how many distinct denials a report lists.
const DefaultCap = 256

// Log collects the denials of one call. Denials with the same operation and
// path (or address) are one entry whose Count grows; past the cap, further
// distinct denials are only counted. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	cap     int
	index   map[string]int
	list    []report.Denial
	dropped int
}

// NewLog returns a log that lists at most limit distinct denials (at least 1).
func NewLog(limit int) *Log {
	return &Log{cap: max(limit, 1), index: map[string]int{}}
}

// Add records one occurrence of d. Count is taken as 1 when d.Count is 0.
func (l *Log) Add(d report.Denial) {
	if d.Count <= 0 {
		d.Count = 1
	}
	k := key(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, ok := l.index[k]; ok {
		l.list[i].Count += d.Count
		return
	}
	if len(l.list) >= l.cap {
		l.dropped += d.Count
		return
	}
	l.index[k] = len(l.list)
	l.list = append(l.list, d)
}

// Denials returns the listed denials in the order first seen, and how many
// occurrences of unlisted ones were dropped.
func (l *Log) Denials() ([]report.Denial, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]report.Denial{}, l.list...), l.dropped
}

func key(d report.Denial) string {
	k := d.Operation + "\x00" + d.Path
	if a := d.Address; a != nil {
		k += "\x00" + a.Family + "\x00" + a.Address + "\x00" + strconv.Itoa(a.Port)
	}
	return k
}
