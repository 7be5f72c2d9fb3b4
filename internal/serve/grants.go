package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

type grantParams struct {
	SessionID     string          `json:"session_id"`
	EnvironmentID string          `json:"environment_id"`
	Requested     json.RawMessage `json:"requested"`
	// Response is the client's answer: {granted, scope,
	// strict_auto_review}, as sbx normalize-grant reads them, or Codex's
	// {permissions, scope, strict_auto_review} on a connection whose
	// grant_key is permissions.
	Response json.RawMessage `json:"response"`
}

// withheldNever is the reason a session under never (a delegated child
// always) gets the empty grant from grants/apply; withheldGranular the
// reason under a granular policy whose request_permissions is false.
const (
	withheldNever    = "approval_policy never: request_permissions is answered with the empty grant, without asking"
	withheldGranular = "approval_policy granular: request_permissions is false, so it is answered with the empty grant, without asking"
)

// grantWithheld is why policy answers every request_permissions round trip
// with the empty grant, "" when it lets the client's response stand.
func grantWithheld(policy profiles.ApprovalPolicy) string {
	if policy == profiles.ApprovalNever {
		return withheldNever
	}
	if g, ok := policy.Granular(); ok && !g.RequestPermissions {
		return withheldGranular
	}
	return ""
}

// applyGrant normalises a request_permissions round trip as sbx
// normalize-grant does (intersected with the request, session+strict made
// an empty turn grant) and stores it by environment id and scope.
//
// key is the connection's grant key (initialize's capabilities.grant_key):
// the response carries the granted profile under it, and only under it.
func (s *Server) applyGrant(params json.RawMessage, key profiles.GrantKey) (any, *Error) {
	var p grantParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	if len(p.Requested) == 0 {
		return nil, required("requested")
	}
	if len(p.Response) == 0 {
		return nil, required("response")
	}
	env, opened := p.EnvironmentID, sess.opened()
	if env == "" {
		env = opened.EnvironmentID
	}
	cwd := opened.Cwd
	var resp map[string]json.RawMessage
	if e := decodeParams(p.Response, &resp); e != nil {
		e.Data.Field, e.Message = "response", "response: "+e.Message
		return nil, e
	}
	for k := range resp {
		if k != key.String() && k != "scope" && k != "strict_auto_review" {
			return nil, paramError("response."+k, fmt.Errorf("unknown field (want %s, scope, strict_auto_review: this connection's grant_key is %s)", key, key))
		}
	}
	cwdJSON, _ := json.Marshal(cwd)
	resp["cwd"], resp["requested"] = cwdJSON, p.Requested
	wire, _ := json.Marshal(resp)
	req, err := profiles.DecodeNormalizeRequestAs(wire, key)
	if err == nil {
		var res profiles.NormalizeResult
		if res, err = profiles.NormalizeResponse(req); err == nil {
			return s.storeGrant(sess, env, res)
		}
	}
	var fe *strictjson.FieldError
	if errors.As(err, &fe) && fe.Field != "requested" && !strings.HasPrefix(fe.Field, "requested.") {
		return nil, paramError("response."+fe.Field, fe.Err)
	}
	return nil, asError(err)
}

func (s *Server) storeGrant(sess *session, env string, res profiles.NormalizeResult) (any, *Error) {
	// The writer's lock from the policy and turn read to the record.
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	if e := sess.goneLocked(); e != nil {
		return nil, e
	}
	rec := journal.GrantApplied{EnvironmentID: env, NormalizeResult: res}
	open := sess.st.OpenTurn()
	if why := grantWithheld(sess.st.Policy); why != "" {
		// Seed 003 §1.2: under Never (and Granular without
		// request_permissions) the tool is answered, without asking, with
		// the empty grant of turn scope, whatever the client sends; a child
		// (pinned to never, seed 000 §12) so gains nothing here. The
		// response was still decoded and normalised above: a malformed one
		// stays an error.
		rec.NormalizeResult = profiles.NormalizeResult{Scope: profiles.ScopeTurn}
		rec.Withheld = why
		rec.TurnID = open
		if err := sess.appendLocked(rec); err != nil {
			return nil, asError(err)
		}
		return rec, nil
	}
	if res.Scope == profiles.ScopeTurn {
		if open == "" {
			e := newError(CodeNoOpenTurn, KindNoOpenTurn, "a turn grant needs an open turn (turn/begin first)")
			e.Data.SessionID = sess.id
			return nil, e
		}
		rec.TurnID = open
	}
	// Stored by stepping the state with the record (journal.ApplyGrant),
	// as a replay of it does.
	if err := sess.appendLocked(rec); err != nil {
		return nil, asError(err)
	}
	return rec, nil
}
