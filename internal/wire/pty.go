package wire

import (
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// PTYSize is the window size of a call's pseudo-terminal ("pty":
// {"rows", "cols"}).
type PTYSize struct{ Rows, Cols int }

// DefaultPTYSize is the size of a pty whose size is not given.
var DefaultPTYSize = PTYSize{Rows: 24, Cols: 80}

// MaxStdinBytes caps exec's "stdin" text: it is held in memory with the
// request, and a command that wants more should read a file.
const MaxStdinBytes = 1 << 20

// Check refuses sizes a terminal cannot have, naming the field as
// prefix+"rows" or prefix+"cols".
func (s PTYSize) Check(prefix string) error {
	for _, v := range []struct {
		name string
		n    int
	}{{"rows", s.Rows}, {"cols", s.Cols}} {
		if v.n < 1 || v.n > 65535 {
			return &strictjson.FieldError{Field: prefix + v.name, Err: fmt.Errorf("%d is not between 1 and 65535", v.n)}
		}
	}
	return nil
}
