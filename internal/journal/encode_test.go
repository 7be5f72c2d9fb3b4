package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// decodeAsReplay is what encodeRecord checked before it skipped the decode:
// the payload decoded strictly, as replay decodes it.
func decodeAsReplay(payload []byte) (Record, error) {
	var back Record
	err := strictjson.Decode(payload, &back)
	return back, err
}

// TestEncodeRecordAsReplay: encodeRecord's record is the one replay
// decodes from its payload, and it refuses exactly what replay would.
func TestEncodeRecordAsReplay(t *testing.T) {
	now := time.Now() // monotonic reading, local zone
	zone := time.FixedZone("X", 5*3600+30*60)
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"no data", Record{Type: TypeSessionOpened, SessionID: "s", Time: now.UTC(), Seq: 1}},
		{"empty data", Record{Type: TypeSessionOpened, SessionID: "s", Time: now.UTC(), Seq: 1, Data: []byte{}}},
		{"local zone", Record{Type: TypeTurnBegun, SessionID: "s", Time: now, Seq: 2, Data: []byte(`{"turn_id":"t"}`)}},
		{"fixed zone", Record{Type: TypeTurnBegun, SessionID: "s", Time: now.In(zone), Seq: 2, Data: []byte(`{"turn_id":"t"}`)}},
		{"spaced data", Record{Type: TypeCallStarted, SessionID: "s", Time: now.UTC(), Seq: 3, Data: []byte(" {\n \"call_id\" : \"c\", \"request\": {\"command\": [\"a<b>&\", \"\\u00e9\"]} }\n")}},
		{"null data", Record{Type: TypeCallFinished, SessionID: "s", Time: now.UTC(), Seq: 4, Data: []byte(`null`)}},
		{"nested duplicate", Record{Type: TypeCallStarted, SessionID: "s", Time: now.UTC(), Seq: 3, Data: []byte(`{"request":{"a":1,"a":2}}`)}},
		{"duplicate", Record{Type: TypeCallStarted, SessionID: "s", Time: now.UTC(), Seq: 3, Data: []byte(`{"call_id":"c","call_id":"d"}`)}},
		{"deep", Record{Type: TypeCallStarted, SessionID: "s", Time: now.UTC(), Seq: 3, Data: []byte(`[[[[{"x":[{"y":{"y":1,"Y":2}}]}]]]]`)}},
		{"bad session id", Record{Type: TypeCallStarted, SessionID: "s\x00", Time: now.UTC(), Seq: 3}},
		{"invalid utf-8 type", Record{Type: "call/\xff", SessionID: "s", Time: now.UTC(), Seq: 3}},
		{"invalid utf-8 data", Record{Type: TypeCallStarted, SessionID: "s", Time: now.UTC(), Seq: 3, Data: []byte("{\"a\":\"\xff\"}")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, back, err := encodeRecord(tc.rec)
			if payload == nil && err != nil {
				// The encoder refused it; the strict decoder must refuse
				// what json.Marshal makes of it too (when it makes any).
				raw, merr := json.Marshal(tc.rec)
				if merr != nil {
					return
				}
				// It may refuse what json.Marshal would rewrite (invalid
				// UTF-8 becomes U+FFFD): replay would read another record.
				if got, derr := decodeAsReplay(raw); derr == nil && got.Type == tc.rec.Type && got.SessionID == tc.rec.SessionID {
					t.Fatalf("encodeRecord refused (%v) what replay reads", err)
				}
				return
			}
			if raw, err := json.Marshal(tc.rec); err != nil || string(raw) != string(payload) {
				t.Fatalf("payload\n%s\njson.Marshal's (%v)\n%s", payload, err, raw)
			}
			want, derr := decodeAsReplay(payload)
			if derr != nil {
				t.Fatalf("replay refuses what encodeRecord accepted: %v\n%s", derr, payload)
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("encodeRecord's record\n%#v\nreplay's\n%#v", back, want)
			}
		})
	}
}

// BenchmarkEncodeRecord is the encode and check of one call/started record
// as sbx serve writes it, without the write.
func BenchmarkEncodeRecord(b *testing.B) {
	rec := Record{Type: TypeCallStarted, SessionID: "s-0123456789abcdef", Time: time.Now().UTC(), Seq: 7,
		Data: []byte(`{"call_id":"c17","turn_id":"t-0123456789abcdef","environment_id":"","request":{"call_id":"c17","command":["/bin/true"],"cwd":"/tmp/sbx-bench-serve-1234567","session_id":"s-0123456789abcdef","turn_id":"t-0123456789abcdef"},"env_names":["HOME","PATH"]}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := encodeRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
}
