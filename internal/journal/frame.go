package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
)

// A log file is a sequence of frames, nothing else:
//
//	offset size
//	0      4    magic "SBXJ"
//	4      1    version, 1
//	5      3    zero
//	8      4    payload length, little endian, at most MaxRecordSize
//	12     4    CRC-32C (Castagnoli) of the payload
//	16     4    CRC-32C of bytes 0..15 (the header so far)
//	20     n    payload: the Record as compact JSON
//
// The header has a checksum of its own so that a length is trusted before
// it is used: a flipped bit in it cannot make replay skip or swallow
// records. A crash while appending leaves a prefix of the last frame; that
// (or zeros a file system may leave past the last write) is a torn tail.
const (
	frameMagic    = "SBXJ"
	frameVersion  = 1
	headerSize    = 20
	MaxRecordSize = 16 << 20
)

// castagnoli is made on first use, not at start-up: on amd64 making it
// builds the SSE4.2 tables too (~0.2 ms), which every sbx process paid at
// its start (sbx run, each stage) though only a server's log and sbx log
// use it (#31).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// encodeFrame frames payload.
func encodeFrame(payload []byte) []byte {
	b := make([]byte, headerSize+len(payload))
	copy(b, frameMagic)
	b[4] = frameVersion
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(payload, castagnoli()))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli()))
	copy(b[headerSize:], payload)
	return b
}

// frame is one frame found in a file.
type frame struct {
	off     int64
	payload []byte
}

// frameError is where and why the frames of a file end early. tail says
// nothing of the file lies beyond the bad frame (it is the last one, so it
// is dropped); otherwise the bytes after it cannot be read with trust, and
// replay of the file stops.
type frameError struct {
	off    int64
	kind   ProblemKind
	reason string
	tail   bool
}

// scanFrames splits data into frames, up to the first that is not whole and
// intact.
func scanFrames(data []byte) ([]frame, *frameError) {
	var frames []frame
	for off := 0; off < len(data); {
		rest := data[off:]
		n, fe := checkFrame(rest)
		if fe != nil {
			fe.off = int64(off)
			return frames, fe
		}
		frames = append(frames, frame{off: int64(off), payload: rest[headerSize:n]})
		off += n
	}
	return frames, nil
}

// checkFrame checks the frame at the start of rest and returns its size.
func checkFrame(rest []byte) (int, *frameError) {
	if len(rest) < headerSize {
		if isTornHeader(rest) {
			return 0, &frameError{kind: ProblemTorn, reason: fmt.Sprintf("incomplete header (%d of %d bytes): a write cut short", len(rest), headerSize), tail: true}
		}
		return 0, &frameError{kind: ProblemCorrupt, reason: fmt.Sprintf("%d bytes that are not a frame header", len(rest)), tail: true}
	}
	h := rest[:headerSize]
	if string(h[:4]) != frameMagic || binary.LittleEndian.Uint32(h[16:]) != crc32.Checksum(h[:16], castagnoli()) {
		if allZero(rest) {
			return 0, &frameError{kind: ProblemTorn, reason: fmt.Sprintf("%d zero bytes where a frame should start: space a file system allocated for a write that never landed", len(rest)), tail: true}
		}
		if next := nextFrame(rest[1:]); next >= 0 {
			return 0, &frameError{kind: ProblemCorrupt, reason: fmt.Sprintf("bad frame header (magic or header checksum), and an intact frame follows %d bytes later", next+1)}
		}
		return 0, &frameError{kind: ProblemCorrupt, reason: "bad frame header (magic or header checksum), and no intact frame after it", tail: true}
	}
	if h[4] != frameVersion || h[5] != 0 || h[6] != 0 || h[7] != 0 {
		return 0, &frameError{kind: ProblemCorrupt, reason: fmt.Sprintf("frame version %d (flags % x): this sbx reads version %d only", h[4], h[5:8], frameVersion), tail: len(rest) == headerSize}
	}
	size := binary.LittleEndian.Uint32(h[8:])
	if size > MaxRecordSize {
		return 0, &frameError{kind: ProblemCorrupt, reason: fmt.Sprintf("payload length %d over the limit %d", size, MaxRecordSize), tail: len(rest) == headerSize}
	}
	n := headerSize + int(size)
	if len(rest) < n {
		return 0, &frameError{kind: ProblemTorn, reason: fmt.Sprintf("incomplete payload (%d of %d bytes): a write cut short", len(rest)-headerSize, size), tail: true}
	}
	if binary.LittleEndian.Uint32(h[12:]) != crc32.Checksum(rest[headerSize:n], castagnoli()) {
		return 0, &frameError{kind: ProblemCorrupt, reason: "payload checksum mismatch", tail: len(rest) == n}
	}
	return n, nil
}

// isTornHeader says whether b can be the start of a header: a prefix of the
// magic (and of the version that follows it), or zeros.
func isTornHeader(b []byte) bool {
	if allZero(b) {
		return true
	}
	want := append([]byte(frameMagic), frameVersion, 0, 0, 0)
	k := min(len(b), len(want))
	return bytes.Equal(b[:k], want[:k])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// nextFrame is the offset in b of the first intact frame, or -1: it tells a
// damaged record in the middle of a file from garbage at its end. A payload
// cannot hold a false frame: a header has bytes 0x00 and 0x01, which
// encoding/json never leaves raw in its output.
func nextFrame(b []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(frameMagic))
		if j < 0 {
			return -1
		}
		i += j
		if intact(b[i:]) {
			return i
		}
		i++
	}
}

// intact says whether b starts with a whole frame whose checksums hold.
func intact(b []byte) bool {
	if len(b) < headerSize || string(b[:4]) != frameMagic || binary.LittleEndian.Uint32(b[16:]) != crc32.Checksum(b[:16], castagnoli()) {
		return false
	}
	n := headerSize + int(binary.LittleEndian.Uint32(b[8:]))
	return b[4] == frameVersion && n-headerSize <= MaxRecordSize && len(b) >= n &&
		binary.LittleEndian.Uint32(b[12:]) == crc32.Checksum(b[headerSize:n], castagnoli())
}
