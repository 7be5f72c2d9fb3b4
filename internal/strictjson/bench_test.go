package strictjson

import (
	"encoding/json"
	"testing"
)

// benchMessage is a JSON-RPC exec request as sbx serve reads it.
var benchMessage = []byte(`{"jsonrpc":"2.0","id":17,"method":"exec","params":{"call_id":"c17","command":["/bin/true"],"cwd":"/tmp/sbx-bench-serve-1234567","session_id":"s-0123456789abcdef","turn_id":"t-0123456789abcdef","env":{"PATH":"/usr/bin:/bin","HOME":"/root"}}}`)

type benchEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

func BenchmarkDecodeStrict(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var m benchEnvelope
		if err := Decode(benchMessage, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePlain(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var m benchEnvelope
		if err := json.Unmarshal(benchMessage, &m); err != nil {
			b.Fatal(err)
		}
	}
}
