package profiles

import (
	"errors"
	"fmt"
	"strings"
)

// CustomPreset is the key derived when the two knobs match no preset. It is
// reserved: no table may define it, and it can never be selected.
const CustomPreset = "custom"

var (
	// ErrCustomPreset is returned when "custom" is configured or selected.
	ErrCustomPreset = errors.New(`"custom" is derived when the sandbox mode and approval policy match no preset; it cannot be configured or selected`)
	// ErrUnknownPreset is returned when a key names no preset of the table.
	ErrUnknownPreset = errors.New("unknown preset")
)

// Preset is a named pair of the two knobs: sandbox mode and approval policy.
type Preset struct {
	Key            string         `json:"key"`
	SandboxMode    Mode           `json:"sandbox_mode"`
	ApprovalPolicy ApprovalPolicy `json:"approval_policy"`
	Label          string         `json:"label,omitempty"`
}

// Matches reports whether p is the pair (mode, policy).
func (p Preset) Matches(mode Mode, policy ApprovalPolicy) bool {
	return p.SandboxMode == mode && p.ApprovalPolicy == policy
}

// builtinPresets are the presets sbx ships, in derivation order. The keys are
// the ones agent runtimes already show their users.
var builtinPresets = []Preset{
	// Reads anywhere; writing anything needs an approved escalation.
	{Key: "read-only", SandboxMode: ReadOnly, ApprovalPolicy: ApprovalOnRequest, Label: "Read only: ask before writing or using the network"},
	// The everyday preset: write the workspace, ask to go beyond it.
	{Key: "auto", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest, Label: "Auto: write the workspace, ask before going beyond it"},
	// Nothing needs asking because the sandbox is open; `never` does not
	// authorise anything, it only denies what would need asking.
	{Key: "full-access", SandboxMode: DangerFullAccess, ApprovalPolicy: ApprovalNever, Label: "Full access: no sandbox, never ask"},
}

// builtinDefault is the default preset key of the built-in table.
const builtinDefault = "auto"

// PresetTable is a validated preset table with its default. Make one with
// LoadPresets or Builtin.
type PresetTable struct {
	presets []Preset
	def     int
}

// PresetDefault says which preset is the default: the one named by Key, or,
// when Key is empty, the first one matching the deployment's default knobs.
type PresetDefault struct {
	Key            string
	SandboxMode    Mode
	ApprovalPolicy ApprovalPolicy
}

// Builtin returns the built-in table; its default is "auto".
func Builtin() PresetTable {
	t := PresetTable{presets: append([]Preset(nil), builtinPresets...)}
	t.def, _ = t.index(builtinDefault)
	return t
}

// LoadPresets validates a preset table and resolves its default. It fails
// when the table is empty, a key is empty, duplicated or "custom", a knob is
// out of range, the default key names no preset, or (without a default key)
// the default knobs match no preset.
func LoadPresets(table []Preset, def PresetDefault) (PresetTable, error) {
	if len(table) == 0 {
		return PresetTable{}, errors.New("presets: the table is empty")
	}
	seen := map[string]bool{}
	for i, p := range table {
		if err := checkPreset(p, seen); err != nil {
			return PresetTable{}, fmt.Errorf("presets[%d]: %w", i, err)
		}
		seen[p.Key] = true
	}
	t := PresetTable{presets: append([]Preset(nil), table...)}
	if def.Key != "" {
		i, err := t.index(def.Key)
		if err != nil {
			return PresetTable{}, fmt.Errorf("default preset: %w", err)
		}
		t.def = i
		return t, nil
	}
	for i, p := range t.presets {
		if p.Matches(def.SandboxMode, def.ApprovalPolicy) {
			t.def = i
			return t, nil
		}
	}
	return PresetTable{}, fmt.Errorf("default preset: no key given, and the default sandbox mode %s with approval policy %s matches no preset (want one of %s)",
		def.SandboxMode, def.ApprovalPolicy, strings.Join(t.keys(), ", "))
}

func checkPreset(p Preset, seen map[string]bool) error {
	switch {
	case strings.TrimSpace(p.Key) == "":
		return errors.New("key: must not be empty")
	case p.Key == CustomPreset:
		return fmt.Errorf("key: %w", ErrCustomPreset)
	case seen[p.Key]:
		return fmt.Errorf("key: %q is defined twice", p.Key)
	}
	if _, err := p.SandboxMode.MarshalText(); err != nil {
		return fmt.Errorf("sandbox_mode: %w", err)
	}
	if _, err := p.ApprovalPolicy.MarshalText(); err != nil {
		return fmt.Errorf("approval_policy: %w", err)
	}
	return nil
}

// List returns the presets in table order.
func (t PresetTable) List() []Preset { return append([]Preset(nil), t.presets...) }

// Default returns the default preset.
func (t PresetTable) Default() Preset {
	if len(t.presets) == 0 {
		return Preset{}
	}
	return t.presets[t.def]
}

// Select returns the preset named key. Selecting "custom" is an error
// (ErrCustomPreset), and so is a key the table lacks (ErrUnknownPreset).
func (t PresetTable) Select(key string) (Preset, error) {
	i, err := t.index(key)
	if err != nil {
		return Preset{}, err
	}
	return t.presets[i], nil
}

// Derive names the preset that the current knobs amount to: lastChoice (the
// key the user last selected) if it still matches them, else the first
// matching entry, else "custom".
func (t PresetTable) Derive(mode Mode, policy ApprovalPolicy, lastChoice string) string {
	if i, err := t.index(lastChoice); err == nil && t.presets[i].Matches(mode, policy) {
		return lastChoice
	}
	for _, p := range t.presets {
		if p.Matches(mode, policy) {
			return p.Key
		}
	}
	return CustomPreset
}

// Derive is Builtin().Derive.
func Derive(mode Mode, policy ApprovalPolicy, lastChoice string) string {
	return Builtin().Derive(mode, policy, lastChoice)
}

func (t PresetTable) index(key string) (int, error) {
	if key == CustomPreset {
		return 0, ErrCustomPreset
	}
	for i, p := range t.presets {
		if p.Key == key {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want one of %s)", ErrUnknownPreset, key, strings.Join(t.keys(), ", "))
}

func (t PresetTable) keys() []string {
	out := make([]string, len(t.presets))
	for i, p := range t.presets {
		out[i] = p.Key
	}
	return out
}
