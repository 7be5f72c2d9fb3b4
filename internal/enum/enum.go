// Package enum spells the small int enums of sbx's wire formats and reports
// (modes, approval policies, scopes, the network, ...): one table of names
// per type, so String, parsing and (un)marshalling follow one rule
// everywhere, and an unknown name is refused listing the known ones.
package enum

import (
	"fmt"
	"strings"
)

// Names are the wire spellings of enum type T, by value from 0. Type names
// T in String's output for a value off the table; What names it in errors
// ("sandbox mode").
type Names[T ~int] struct {
	Type, What string
	Names      []string
}

// String is v's name, or Type(v) for a value off the table.
func (n Names[T]) String(v T) string {
	if v < 0 || int(v) >= len(n.Names) {
		return fmt.Sprintf("%s(%d)", n.Type, int(v))
	}
	return n.Names[v]
}

// Parse reads a name exactly as spelled on the wire.
func (n Names[T]) Parse(s string) (T, error) {
	for i, name := range n.Names {
		if s == name {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", n.What, s, strings.Join(n.Names, ", "))
}

// Marshal is MarshalText: a value off the table is an error, never written.
func (n Names[T]) Marshal(v T) ([]byte, error) {
	if v < 0 || int(v) >= len(n.Names) {
		return nil, fmt.Errorf("invalid %s %d", n.What, int(v))
	}
	return []byte(n.Names[v]), nil
}

// Unmarshal is UnmarshalText: *p is set only when b is a known name.
func (n Names[T]) Unmarshal(p *T, b []byte) error {
	v, err := n.Parse(string(b))
	if err == nil {
		*p = v
	}
	return err
}
