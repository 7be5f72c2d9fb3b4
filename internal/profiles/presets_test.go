package profiles

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadPresetsRefusals(t *testing.T) {
	auto := Preset{Key: "auto", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest}
	ro := Preset{Key: "ro", SandboxMode: ReadOnly, ApprovalPolicy: ApprovalOnRequest}
	tests := []struct {
		name  string
		table []Preset
		def   PresetDefault
		want  string
	}{
		{"empty table", nil, PresetDefault{Key: "auto"}, "the table is empty"},
		{"empty key", []Preset{auto, {Key: " "}}, PresetDefault{Key: "auto"}, "presets[1]: key: must not be empty"},
		{"custom as a key", []Preset{auto, {Key: "custom"}}, PresetDefault{Key: "auto"}, `presets[1]: key: "custom" is derived`},
		{"duplicate key", []Preset{auto, ro, auto}, PresetDefault{Key: "auto"}, `presets[2]: key: "auto" is defined twice`},
		{"bad mode", []Preset{{Key: "x", SandboxMode: Mode(9)}}, PresetDefault{Key: "x"}, "presets[0]: sandbox_mode: invalid"},
		{"bad policy", []Preset{{Key: "x", ApprovalPolicy: ApprovalPolicy(9)}}, PresetDefault{Key: "x"}, "presets[0]: approval_policy: invalid"},
		{"default key unknown", []Preset{auto, ro}, PresetDefault{Key: "full"}, `default preset: unknown preset "full" (want one of auto, ro)`},
		{"default key custom", []Preset{auto, ro}, PresetDefault{Key: "custom"}, `default preset: "custom" is derived`},
		{"default knobs match nothing", []Preset{auto, ro}, PresetDefault{SandboxMode: DangerFullAccess, ApprovalPolicy: ApprovalNever},
			"default preset: no key given, and the default sandbox mode danger-full-access with approval policy never matches no preset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadPresets(tt.table, tt.def)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadPresetsDefault(t *testing.T) {
	table := []Preset{
		{Key: "a", SandboxMode: ReadOnly, ApprovalPolicy: ApprovalNever},
		{Key: "b", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest},
		{Key: "c", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest},
	}
	tt, err := LoadPresets(table, PresetDefault{Key: "c"})
	if err != nil || tt.Default().Key != "c" {
		t.Fatalf("by key: %v, %v", tt.Default(), err)
	}
	tt, err = LoadPresets(table, PresetDefault{SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest})
	if err != nil || tt.Default().Key != "b" {
		t.Fatalf("by knobs: %v, %v (want the first match)", tt.Default(), err)
	}
}

func TestSelect(t *testing.T) {
	b := Builtin()
	if _, err := b.Select(CustomPreset); !errors.Is(err, ErrCustomPreset) {
		t.Errorf("select custom: %v", err)
	}
	if _, err := b.Select("nope"); !errors.Is(err, ErrUnknownPreset) {
		t.Errorf("select unknown: %v", err)
	}
	if p, err := b.Select("full-access"); err != nil || p.SandboxMode != DangerFullAccess || p.ApprovalPolicy != ApprovalNever {
		t.Errorf("select full-access: %+v, %v", p, err)
	}
}

func TestDerive(t *testing.T) {
	// Two entries share a pair so that the last-choice rule shows.
	table, err := LoadPresets([]Preset{
		{Key: "ro", SandboxMode: ReadOnly, ApprovalPolicy: ApprovalOnRequest},
		{Key: "auto", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest},
		{Key: "workspace", SandboxMode: WorkspaceWrite, ApprovalPolicy: ApprovalOnRequest},
	}, PresetDefault{Key: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mode   Mode
		policy ApprovalPolicy
		last   string
		want   string
	}{
		{"no match is custom", DangerFullAccess, ApprovalOnRequest, "", "custom"},
		{"no match is custom even with a last choice", ReadOnly, ApprovalNever, "ro", "custom"},
		{"last choice no longer matching loses", WorkspaceWrite, ApprovalOnRequest, "ro", "auto"},
		{"last choice custom is derived anew", WorkspaceWrite, ApprovalOnRequest, "custom", "auto"},
		{"unknown last choice ignored", WorkspaceWrite, ApprovalOnRequest, "gone", "auto"},
		{"first match", WorkspaceWrite, ApprovalOnRequest, "", "auto"},
		{"last choice still matching wins", WorkspaceWrite, ApprovalOnRequest, "workspace", "workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := table.Derive(tt.mode, tt.policy, tt.last); got != tt.want {
				t.Errorf("Derive(%s, %s, %q) = %q, want %q", tt.mode, tt.policy, tt.last, got, tt.want)
			}
		})
	}
}

// Invariants across every built-in preset.
func TestBuiltinPresets(t *testing.T) {
	b := Builtin()
	if _, err := LoadPresets(b.List(), PresetDefault{Key: builtinDefault}); err != nil {
		t.Fatalf("built-in table does not load: %v", err)
	}
	if b.Default().Key != "auto" {
		t.Errorf("default %q, want auto", b.Default().Key)
	}
	for _, p := range b.List() {
		if got := Derive(p.SandboxMode, p.ApprovalPolicy, ""); got != p.Key {
			t.Errorf("%s: derives to %q", p.Key, got)
		}
		if p.Label == "" {
			t.Errorf("%s: no label", p.Key)
		}
	}
	// Every pair of knobs derives to a built-in key or to custom, never "".
	for _, m := range Modes() {
		for _, a := range ApprovalPolicies() {
			if got := Derive(m, a, ""); got == "" {
				t.Errorf("Derive(%s, %s) is empty", m, a)
			}
		}
	}
}
