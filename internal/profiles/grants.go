package profiles

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// ErrUnknownCall is returned by GrantStore.Respond for a response whose call
// id has no pending request (never asked, already answered, cancelled, or its
// turn ended). Such a response grants nothing: DESIGN.md rule 4.
var ErrUnknownCall = errors.New("no pending permission request with this call id")

// PendingRequest is a request_permissions call waiting for its response.
type PendingRequest struct {
	CallID        string `json:"call_id"`
	EnvironmentID string `json:"environment_id"`
	// TurnID is the turn that asked. A turn-scoped grant is recorded on it,
	// whatever turn is current when the response arrives.
	TurnID string `json:"turn_id"`
	// Requested is the normalised profile that was asked for; the response is
	// intersected with it, never trusted as sent.
	Requested Profile `json:"requested"`
}

// Response is a client's answer to a pending request.
type Response struct {
	CallID           string  `json:"call_id"`
	Granted          Profile `json:"granted"`
	Scope            Scope   `json:"scope"`
	StrictAutoReview bool    `json:"strict_auto_review"`
}

// Grant is what a response actually granted, after normalisation.
type Grant struct {
	CallID        string `json:"call_id"`
	EnvironmentID string `json:"environment_id"`
	TurnID        string `json:"turn_id"`
	NormalizeResult
}

// Grants are the sticky grants that apply to one call: the session's and the
// current turn's, for the call's environment. Its JSON shape is the `grants`
// field of `sbx exec`: {"session": profile, "turn": profile}.
type Grants struct {
	Session Profile `json:"session"`
	Turn    Profile `json:"turn"`
	// TurnStrict is the turn grant's strict_auto_review: every call of the
	// turn goes to approval, even one the grants cover (as in Codex).
	TurnStrict bool `json:"turn_strict"`
}

// Normalize normalises both profiles against cwd; errors name the field
// ("grants.session.file_system.write[0]: ...").
func (g Grants) Normalize(cwd string) (Grants, error) {
	s, err := g.Session.Normalize(cwd)
	if err != nil {
		return Grants{}, prefixField("grants.session", err)
	}
	t, err := g.Turn.Normalize(cwd)
	if err != nil {
		return Grants{}, prefixField("grants.turn", err)
	}
	return Grants{Session: s, Turn: t, TurnStrict: g.TurnStrict}, nil
}

// GrantStore keeps granted profiles by environment id and scope, and the
// requests still waiting for an answer. The zero value is ready to use; it is
// safe for concurrent use. Grants live in memory only: nothing here changes a
// preset, a default or a file.
type GrantStore struct {
	mu      sync.Mutex
	pending map[string]PendingRequest
	session map[string]Profile
	turn    map[turnKey]Profile
	strict  map[string]bool // turn id -> strict auto review asked
}

type turnKey struct{ env, turn string }

// Request records a pending request. The ids must be non-empty, the call id
// not already pending, and the requested profile normalised and non-empty (a
// request for nothing has nothing to answer).
func (s *GrantStore) Request(req PendingRequest) error {
	switch {
	case req.CallID == "":
		return &strictjson.FieldError{Field: "call_id", Err: errors.New("must not be empty")}
	case req.EnvironmentID == "":
		return &strictjson.FieldError{Field: "environment_id", Err: errors.New("must not be empty")}
	case req.TurnID == "":
		return &strictjson.FieldError{Field: "turn_id", Err: errors.New("must not be empty")}
	case req.Requested.IsEmpty():
		return &strictjson.FieldError{Field: "requested", Err: errors.New("requests nothing")}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.pending[req.CallID]; dup {
		return &strictjson.FieldError{Field: "call_id", Err: fmt.Errorf("%q is already pending", req.CallID)}
	}
	if s.pending == nil {
		s.pending = map[string]PendingRequest{}
	}
	s.pending[req.CallID] = req
	return nil
}

// Respond applies a response to its pending request and records the result:
// the grant is intersected with what was requested, session+strict becomes an
// empty turn grant, a turn grant goes to the turn that asked. The request is
// then no longer pending, so a second answer is unknown. An empty grant is a
// valid answer. For an unknown call id Respond records nothing and returns a
// zero Grant and an error matching ErrUnknownCall.
func (s *GrantStore) Respond(resp Response) (Grant, error) {
	if _, err := resp.Scope.MarshalText(); err != nil {
		return Grant{}, &strictjson.FieldError{Field: "scope", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.pending[resp.CallID]
	if !ok {
		return Grant{}, fmt.Errorf("call %q: %w", resp.CallID, ErrUnknownCall)
	}
	delete(s.pending, resp.CallID)
	res := normalizeGrant(req.Requested, resp.Granted, resp.Scope, resp.StrictAutoReview)
	s.record(req, res)
	return Grant{CallID: req.CallID, EnvironmentID: req.EnvironmentID, TurnID: req.TurnID, NormalizeResult: res}, nil
}

func (s *GrantStore) record(req PendingRequest, res NormalizeResult) {
	if res.Scope == ScopeSession {
		if s.session == nil {
			s.session = map[string]Profile{}
		}
		s.session[req.EnvironmentID] = Merge(s.session[req.EnvironmentID], res.Permissions)
		return
	}
	key := turnKey{req.EnvironmentID, req.TurnID}
	if s.turn == nil {
		s.turn = map[turnKey]Profile{}
	}
	s.turn[key] = Merge(s.turn[key], res.Permissions)
	if res.StrictAutoReview {
		if s.strict == nil {
			s.strict = map[string]bool{}
		}
		s.strict[req.TurnID] = true
	}
}

// Cancel drops a pending request, so that a late answer grants nothing. It
// reports whether the call was pending.
func (s *GrantStore) Cancel(callID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[callID]
	delete(s.pending, callID)
	return ok
}

// EndTurn forgets a turn: its grants, its strict flag and its unanswered
// requests (an answer arriving afterwards is unknown and grants nothing).
func (s *GrantStore) EndTurn(turnID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.turn {
		if k.turn == turnID {
			delete(s.turn, k)
		}
	}
	delete(s.strict, turnID)
	for id, p := range s.pending {
		if p.TurnID == turnID {
			delete(s.pending, id)
		}
	}
}

// Grants returns the sticky grants for a call in envID during turnID.
func (s *GrantStore) Grants(envID, turnID string) Grants {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Grants{Session: s.session[envID], Turn: s.turn[turnKey{envID, turnID}], TurnStrict: s.strict[turnID]}
}

// StrictAutoReview reports whether a turn-scoped grant of turnID asked for
// every later call of that turn to be reviewed, even one a grant covers.
func (s *GrantStore) StrictAutoReview(turnID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.strict[turnID]
}

// Effective returns the effective additional permissions of a call in envID
// during turnID; see Grants.Effective. Grants of other environments never
// apply.
func (s *GrantStore) Effective(envID, turnID string, explicit Profile, sp SandboxPermissions) EffectivePermissions {
	e := s.Grants(envID, turnID).Effective(explicit, sp)
	e.StrictAutoReview = s.StrictAutoReview(turnID)
	return e
}

// Sources says where each effective permission came from.
type Sources struct {
	Session Profile `json:"session"`
	Turn    Profile `json:"turn"`
	Call    Profile `json:"call"`
}

// EffectivePermissions is what a call may use beyond its standing mode.
type EffectivePermissions struct {
	// Permissions is the union of Sources.
	Permissions Profile `json:"permissions"`
	Sources     Sources `json:"sources"`
	// Implicit is true when sticky grants apply to a call that named no
	// additional permissions: it runs as with_additional_permissions, already
	// approved, and needs no justification.
	Implicit bool `json:"implicit"`
	// Preapproved is true when the sticky grants already cover the call's
	// explicit permissions, so they need no approval. Always true when Implicit.
	Preapproved bool `json:"preapproved"`
	// StrictAutoReview is set by GrantStore.Effective when the turn asked for
	// strict review.
	StrictAutoReview bool `json:"strict_auto_review"`
}

// Effective returns the effective additional permissions for a call with the
// given explicit profile and sandbox_permissions (DESIGN.md rule 5). All
// profiles must be normalised.
//
//   - require_escalated: sticky grants do not apply; only the call's own.
//   - otherwise: session + turn + explicit (union). With nothing explicit
//     and use_default, the sticky grants apply implicitly (Implicit). With
//     explicit permissions, the sticky grants still join the union but do not
//     approve the explicit part unless they cover it (Preapproved): an explicit
//     request never slips through on the implicit path.
func (g Grants) Effective(explicit Profile, sp SandboxPermissions) EffectivePermissions {
	if sp == RequireEscalated {
		return EffectivePermissions{Permissions: explicit, Sources: Sources{Call: explicit}, StrictAutoReview: g.TurnStrict}
	}
	sticky := Merge(g.Session, g.Turn)
	e := EffectivePermissions{
		Permissions:      Merge(sticky, explicit),
		Sources:          Sources{Session: g.Session, Turn: g.Turn, Call: explicit},
		Preapproved:      sticky.Covers(explicit),
		StrictAutoReview: g.TurnStrict,
	}
	e.Implicit = sp == UseDefault && explicit.IsEmpty() && !sticky.IsEmpty()
	return e
}

func prefixField(prefix string, err error) error {
	var fe *strictjson.FieldError
	if errors.As(err, &fe) {
		return &strictjson.FieldError{Field: prefix + "." + fe.Field, Err: fe.Err}
	}
	return &strictjson.FieldError{Field: prefix, Err: err}
}
