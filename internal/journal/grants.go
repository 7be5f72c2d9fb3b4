package journal

import "github.com/sbx-sandbox/sbx/internal/profiles"

// EnvGrants are one environment's stored grants: the session's outlive
// turns, the turn's end with the turn that holds them.
type EnvGrants struct {
	Session    profiles.Profile
	Turn       profiles.Profile
	TurnID     string
	TurnStrict bool
}

// ApplyGrant adds a grant/applied record's grant to grants (by environment
// id): what the record does, on a live server and on replay alike. A
// withheld grant adds nothing; a turn grant of another turn than the one
// stored replaces it.
func ApplyGrant(grants map[string]*EnvGrants, rec GrantApplied) {
	if rec.Withheld != "" {
		return
	}
	g := grants[rec.EnvironmentID]
	if g == nil {
		g = &EnvGrants{}
		grants[rec.EnvironmentID] = g
	}
	if rec.Scope == profiles.ScopeSession {
		g.Session = profiles.Merge(g.Session, rec.Permissions)
		return
	}
	if g.TurnID != rec.TurnID {
		g.Turn, g.TurnStrict = profiles.Profile{}, false
	}
	g.TurnID = rec.TurnID
	g.Turn = profiles.Merge(g.Turn, rec.Permissions)
	g.TurnStrict = g.TurnStrict || rec.StrictAutoReview
}

// EndTurn drops the grants of turn turnID: turn/ended's effect on them.
func EndTurn(grants map[string]*EnvGrants, turnID string) {
	for _, g := range grants {
		if g.TurnID == turnID {
			g.Turn, g.TurnID, g.TurnStrict = profiles.Profile{}, "", false
		}
	}
}
