package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Granular is Codex's GranularApprovalConfig, the body of the approval
// policy {"granular": {...}}: each category says whether prompts of that
// kind may be shown; a false category is denied without asking. sbx has
// two of them: SandboxApproval gates the escalation prompts of a call
// (with_additional_permissions, require_escalated, cap_add), and
// RequestPermissions gates sbx serve's grants/apply. Rules, SkillApproval
// and McpElicitations are Codex's own prompts: recorded and echoed, they
// change nothing sbx does (GranularNotApplying names them).
//
// As in Codex, sandbox_approval, rules and mcp_elicitations are required;
// skill_approval and request_permissions default to false.
type Granular struct {
	SandboxApproval    bool `json:"sandbox_approval" strict:"required"`
	Rules              bool `json:"rules" strict:"required"`
	SkillApproval      bool `json:"skill_approval"`
	RequestPermissions bool `json:"request_permissions"`
	McpElicitations    bool `json:"mcp_elicitations" strict:"required"`
}

// GranularNotApplying lists the granular categories that have no meaning
// for sbx: recorded and reported, never enforced.
var GranularNotApplying = []string{"rules", "skill_approval", "mcp_elicitations"}

// granularTag marks a granular policy; its categories are the bits below
// it, in the order of granularCategories.
const granularTag ApprovalPolicy = 1 << 8

const granularPrefix = "granular:"

// granularCategories are the categories in Codex's field order, with the
// field each bit stands for.
var granularCategories = []struct {
	name  string
	field func(*Granular) *bool
}{
	{"sandbox_approval", func(g *Granular) *bool { return &g.SandboxApproval }},
	{"rules", func(g *Granular) *bool { return &g.Rules }},
	{"skill_approval", func(g *Granular) *bool { return &g.SkillApproval }},
	{"request_permissions", func(g *Granular) *bool { return &g.RequestPermissions }},
	{"mcp_elicitations", func(g *Granular) *bool { return &g.McpElicitations }},
}

// GranularPolicy is the approval policy {"granular": g}.
func GranularPolicy(g Granular) ApprovalPolicy {
	a := granularTag
	for i, c := range granularCategories {
		if *c.field(&g) {
			a |= 1 << i
		}
	}
	return a
}

// Granular returns a granular policy's categories; ok is false for the
// named policies and for a value off the table.
func (a ApprovalPolicy) Granular() (g Granular, ok bool) {
	if a&^(1<<len(granularCategories)-1) != granularTag {
		return Granular{}, false
	}
	for i, c := range granularCategories {
		*c.field(&g) = a&(1<<i) != 0
	}
	return g, true
}

// cliSpelling is "granular:" and the allowed categories, comma-separated.
func (g Granular) cliSpelling() string {
	var on []string
	for _, c := range granularCategories {
		if *c.field(&g) {
			on = append(on, c.name)
		}
	}
	return granularPrefix + strings.Join(on, ",")
}

// parseGranularList reads the categories after "granular:": each known
// name once; the empty list allows none.
func parseGranularList(s string) (Granular, error) {
	var g Granular
	if s == "" {
		return g, nil
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, c := range granularCategories {
			if c.name == name {
				*c.field(&g), found = true, true
			}
		}
		if !found {
			return Granular{}, fmt.Errorf("unknown granular category %q (want %s)", name, granularNames())
		}
		if seen[name] {
			return Granular{}, fmt.Errorf("granular category %q given twice", name)
		}
		seen[name] = true
	}
	return g, nil
}

func granularNames() string {
	names := make([]string, len(granularCategories))
	for i, c := range granularCategories {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// granularWire is the externally tagged form Codex writes.
type granularWire struct {
	Granular *Granular `json:"granular" strict:"required"`
}

// MarshalJSON writes a named policy as its string and a granular one as
// Codex's {"granular": {...}}, every category spelt out.
func (a ApprovalPolicy) MarshalJSON() ([]byte, error) {
	if g, ok := a.Granular(); ok {
		return json.Marshal(granularWire{Granular: &g})
	}
	b, err := approvalNames.Marshal(a)
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON reads one of the four names, or Codex's externally tagged
// {"granular": {...}} strictly (exact keys, no duplicates, the required
// categories present).
func (a *ApprovalPolicy) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var w granularWire
		if err := strictjson.Decode(b, &w); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(json.Unmarshal(b, &w), &te) && te.Field != "" {
				// Named as a field, so that the caller's path reaches it.
				return &strictjson.FieldError{Field: te.Field, Err: fmt.Errorf("expected %s, got JSON %s", strictjson.JSONKind(te.Type), te.Value)}
			}
			return err
		}
		*a = GranularPolicy(*w.Granular)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`approval policy: want one of never, on-request, on-failure, untrusted or {"granular": {...}}`)
	}
	return a.UnmarshalText([]byte(s))
}
