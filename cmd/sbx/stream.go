package main

import (
	"encoding/json"
	"io"

	"github.com/sbx-sandbox/sbx/internal/wire"
)

// outputEvent is one chunk of a streamed call's output (wire.OutputEvent).
type outputEvent = wire.OutputEvent

// streamResult is the last line of a streamed call (wire.StreamResult).
type streamResult = wire.StreamResult

// writeJSONLine writes v as one compact line.
func writeJSONLine(w io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return writeJSON(w, v)
	}
	w.Write(append(b, '\n'))
	return 0
}
