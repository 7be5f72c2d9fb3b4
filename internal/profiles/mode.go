package profiles

import "github.com/sbx-sandbox/sbx/internal/enum"

// Mode is a sandbox mode. Its order is the escalation ladder:
// ReadOnly < WorkspaceWrite < DangerFullAccess.
type Mode int

const (
	ReadOnly Mode = iota
	WorkspaceWrite
	DangerFullAccess
)

var modeNames = enum.Names[Mode]{Type: "Mode", What: "sandbox mode", Names: []string{"read-only", "workspace-write", "danger-full-access"}}

// Modes lists every mode in ladder order.
func Modes() []Mode { return []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess} }

func (m Mode) String() string { return modeNames.String(m) }

// ParseMode parses the wire spelling of a mode.
func ParseMode(s string) (Mode, error) { return modeNames.Parse(s) }

// WiderThan reports whether m is strictly higher on the ladder than o.
func (m Mode) WiderThan(o Mode) bool { return m > o }

func (m Mode) MarshalText() ([]byte, error) { return modeNames.Marshal(m) }

func (m *Mode) UnmarshalText(b []byte) error { return modeNames.Unmarshal(m, b) }
