package windows

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// envBlock is env as CreateProcess wants it with CREATE_UNICODE_ENVIRONMENT:
// each NAME=VALUE as NUL-terminated UTF-16, then one more NUL (two for an
// empty environment). A NUL inside an entry would end the block early and
// hide the entries after it, so it is an error naming the variable.
func envBlock(env []string) ([]uint16, error) {
	var b []uint16
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			name, _, _ := strings.Cut(kv, "=")
			return nil, fmt.Errorf("env %s: contains a NUL byte", name)
		}
		b = append(append(b, utf16.Encode([]rune(kv))...), 0)
	}
	if len(env) == 0 {
		b = append(b, 0)
	}
	return append(b, 0), nil
}
