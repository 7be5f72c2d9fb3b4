package profiles

import (
	"fmt"
	"strings"
)

// Mode is a sandbox mode. Its order is the escalation ladder:
// ReadOnly < WorkspaceWrite < DangerFullAccess.
type Mode int

const (
	ReadOnly Mode = iota
	WorkspaceWrite
	DangerFullAccess
)

var modeNames = [...]string{"read-only", "workspace-write", "danger-full-access"}

// Modes lists every mode in ladder order.
func Modes() []Mode { return []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess} }

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode parses the wire spelling of a mode.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sandbox mode %q (want %s)", s, strings.Join(modeNames[:], ", "))
}

// WiderThan reports whether m is strictly higher on the ladder than o.
func (m Mode) WiderThan(o Mode) bool { return m > o }

func (m Mode) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(modeNames) {
		return nil, fmt.Errorf("invalid sandbox mode %d", int(m))
	}
	return []byte(m.String()), nil
}

func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
