package host

import (
	"fmt"
	"sync"
)

// CappedBuffer keeps the first and last bytes of a stream and counts what it
// dropped between them, so a command that prints 100 MB costs bounded memory
// and the caller still sees how it started and how it ended.
type CappedBuffer struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte // ring of at most limit/2 bytes
	tailPos int
	dropped int64
}

// NewCappedBuffer keeps at most limit bytes (half head, half tail).
func NewCappedBuffer(limit int) *CappedBuffer {
	if limit < 2 {
		limit = 2
	}
	return &CappedBuffer{limit: limit}
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	headCap := b.limit - b.limit/2
	if room := headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailCap := b.limit / 2
	if k := min(tailCap-len(b.tail), len(p)); k > 0 {
		b.tail = append(b.tail, p[:k]...)
		p = p[k:]
	}
	if len(p) >= tailCap {
		// The whole ring is replaced by the end of p.
		b.dropped += int64(len(p))
		copy(b.tail, p[len(p)-tailCap:])
		b.tailPos = 0
		return n, nil
	}
	// Overwrite the oldest tail bytes; they are dropped from the middle.
	b.dropped += int64(len(p))
	for len(p) > 0 {
		k := copy(b.tail[b.tailPos:], p)
		b.tailPos = (b.tailPos + k) % tailCap
		p = p[k:]
	}
	return n, nil
}

// String returns head, a truncation marker if anything was dropped, and tail.
func (b *CappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte(nil), b.tail[b.tailPos:]...), b.tail[:b.tailPos]...)
	if b.dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... sbx: %d bytes truncated ...]\n%s", b.head, b.dropped, tail)
}

// Truncated reports whether bytes were dropped.
func (b *CappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped > 0
}
