package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// methodTable is the protocol's methods, in the order initialize lists
// them: a method is added in one row (and in docs/serve.md's table,
// which TestMethodTableDocumented checks). Set in init: initialize's
// handler reads the table back (Methods), an initialization cycle for a
// plain var.
var methodTable []method

// methodIndex is methodTable by name, for the dispatch.
var methodIndex map[string]*method

func init() {
	methodTable = []method{
		{name: "initialize", stream: (*conn).initialize, admit: admitAlways},
		{name: "session/open", unary: (*conn).openSession},
		{name: "session/set_preset", unary: onServer((*Server).setPreset)},
		{name: "session/permissions", unary: onServer((*Server).permissions)},
		{name: "session/close", stream: (*conn).closeSession},
		{name: "turn/begin", unary: onServer((*Server).beginTurn)},
		{name: "turn/end", unary: onServer((*Server).endTurn)},
		{name: "grants/apply", unary: (*conn).applyGrant},
		{name: "exec", stream: (*conn).exec, needsID: true},
		{name: "exec/cancel", unary: (*conn).cancelExec},
		{name: "call/status", unary: onServer((*Server).callStatus)},
		{name: "$/cancelRequest", unary: (*conn).cancelRequest, admit: admitAlways},
		{name: "shutdown", unary: (*conn).shutdownMethod, admit: admitUntilOwnShutdown},
		{name: "exit", exit: true},
	}
	methodIndex = make(map[string]*method, len(methodTable))
	for i := range methodTable {
		methodIndex[methodTable[i].name] = &methodTable[i]
	}
}

// Methods are the method names, for initialize's capabilities.
func Methods() []string {
	names := make([]string, len(methodTable))
	for i, m := range methodTable {
		names[i] = m.name
	}
	return names
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeResult struct {
	Server          serverInfo     `json:"server"`
	ProtocolVersion string         `json:"protocol_version"`
	Capabilities    map[string]any `json:"capabilities"`
}

// initialize replies itself: the pending approvals sent again to a
// client that declared approvals must follow its result on the wire.
func (c *conn) initialize(_ context.Context, params json.RawMessage, r *replier) error {
	// Clients send their own facts; only capabilities.approvals is read,
	// and a newer client's other facts must not be refused.
	var p map[string]json.RawMessage
	if e := decodeParams(params, &p); e != nil {
		return e
	}
	approvals, key, e := clientCapabilities(p["capabilities"])
	if e != nil {
		return e
	}
	if e := c.fixGrantKey(key); e != nil {
		return e
	}
	client := c.srv.opt.Client
	caps := map[string]any{"methods": Methods(), "stream": true, "max_message_bytes": c.srv.opt.MaxMessage,
		"answerer": c.srv.opt.Answerer != nil, "approvals": client != nil, "grant_key": c.grantKeyOf()}
	for k, v := range c.srv.opt.Capabilities {
		caps[k] = v
	}
	c.mu.Lock()
	c.initialized = true
	c.mu.Unlock()
	r.reply(initializeResult{Server: serverInfo{Name: "sbx", Version: c.srv.opt.Version}, ProtocolVersion: ProtocolVersion, Capabilities: caps}, nil)
	if approvals && client != nil {
		// After the reply: the pending approvals sent again follow it.
		client.attach(c)
	}
	return nil
}

// clientCapabilities reads initialize's capabilities.approvals (true
// makes the connection a client the client answerer asks) and
// capabilities.grant_key (nil when not given). Other capabilities are a
// newer client's and skipped.
func clientCapabilities(raw json.RawMessage) (bool, *profiles.GrantKey, *Error) {
	if raw == nil {
		return false, nil, nil
	}
	var caps map[string]json.RawMessage
	if e := decodeParams(raw, &caps); e != nil {
		e.Data.Field, e.Message = "capabilities", "capabilities: "+e.Message
		return false, nil, e
	}
	var key *profiles.GrantKey
	if v, ok := caps["grant_key"]; ok {
		var s string
		k, err := profiles.GrantKey(0), json.Unmarshal(v, &s)
		if err == nil {
			k, err = profiles.ParseGrantKey(s)
		}
		if err != nil {
			return false, nil, paramError("capabilities.grant_key", errors.New(`must be "granted" or "permissions"`))
		}
		key = &k
	}
	v, ok := caps["approvals"]
	if !ok {
		return false, key, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, nil, paramError("capabilities.approvals", errors.New("must be a boolean"))
	}
	return b, key, nil
}

// fixGrantKey sets the connection's grant key at its first initialize
// (the one named, else granted); a later initialize may repeat it but not
// change it: within one connection only one spelling of a grant is
// accepted.
func (c *conn) fixGrantKey(key *profiles.GrantKey) *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initialized {
		if key != nil && *key != c.grantKey {
			return paramError("capabilities.grant_key", fmt.Errorf("the connection's grant key is %s: it is fixed at the first initialize", c.grantKey))
		}
		return nil
	}
	c.grantKey = profiles.GrantKeyGranted
	if key != nil {
		c.grantKey = *key
	}
	return nil
}

// grantKeyOf is the connection's grant key.
func (c *conn) grantKeyOf() profiles.GrantKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grantKey
}

// applyGrant is grants/apply under the connection's grant key.
func (c *conn) applyGrant(_ context.Context, params json.RawMessage) (any, error) {
	res, e := c.srv.applyGrant(params, c.grantKeyOf())
	if e != nil {
		return nil, e
	}
	return res, nil
}

// shutdownMethod: the connection takes no more requests but exit, and the
// server no more connections; calls in flight finish, and their pending
// approvals settle cancelled (Server.Shutdown).
func (c *conn) shutdownMethod(_ context.Context, params json.RawMessage) (any, error) {
	var p struct{}
	if e := decodeParams(params, &p); e != nil {
		return nil, e
	}
	c.mu.Lock()
	c.shutdown = true
	c.mu.Unlock()
	c.srv.Shutdown()
	return nil, nil
}

type openParams struct {
	SessionID       string                   `json:"session_id"`
	Cwd             string                   `json:"cwd"`
	EnvironmentID   string                   `json:"environment_id"`
	Preset          *string                  `json:"preset"`
	SandboxMode     *profiles.Mode           `json:"sandbox_mode"`
	ApprovalPolicy  *profiles.ApprovalPolicy `json:"approval_policy"`
	Guard           string                   `json:"guard"`
	ParentSessionID string                   `json:"parent_session_id"`
	ACPSessionID    *string                  `json:"acp_session_id"`
}

// openSession is session/open: the session opened is bound to the
// connection that opened it (its approvals are sent there), before the
// result tells the client its id.
func (c *conn) openSession(_ context.Context, params json.RawMessage) (any, error) {
	res, e := c.srv.openSession(params)
	if e != nil {
		return nil, e
	}
	c.bind(res.SessionID)
	return res, nil
}

func (s *Server) openSession(params json.RawMessage) (*facts, *Error) {
	var p openParams
	if e := decodeParams(params, &p); e != nil {
		return nil, e
	}
	if p.Cwd == "" {
		return nil, required("cwd")
	}
	cwd, err := call.ResolveCwd(p.Cwd)
	if err != nil {
		return nil, paramError("cwd", err)
	}
	if p.Preset != nil && (p.SandboxMode != nil || p.ApprovalPolicy != nil) {
		return nil, paramError("preset", errors.New("give a preset, or sandbox_mode and approval_policy, not both"))
	}
	if (p.SandboxMode == nil) != (p.ApprovalPolicy == nil) {
		field := "approval_policy"
		if p.SandboxMode == nil {
			field = "sandbox_mode"
		}
		return nil, paramError(field, errors.New("sandbox_mode and approval_policy come together (or give a preset)"))
	}
	def := s.opt.Defaults()
	rec := journal.SessionOpened{Cwd: cwd, EnvironmentID: p.EnvironmentID, Guard: p.Guard, ParentSessionID: p.ParentSessionID,
		SandboxMode: def.SandboxMode, ApprovalPolicy: def.ApprovalPolicy}
	switch {
	case p.Preset != nil:
		pr, err := s.table.Select(*p.Preset)
		if err != nil {
			return nil, paramError("preset", err)
		}
		rec.SandboxMode, rec.ApprovalPolicy, rec.Preset, rec.ExplicitMode = pr.SandboxMode, pr.ApprovalPolicy, pr.Key, true
	case p.SandboxMode != nil:
		rec.SandboxMode, rec.ApprovalPolicy, rec.ExplicitMode = *p.SandboxMode, *p.ApprovalPolicy, true
	}
	if p.ParentSessionID != "" {
		if e := s.childFacts(&rec, p); e != nil {
			return nil, e
		}
	}
	if p.ACPSessionID != nil {
		if *p.ACPSessionID == "" {
			return nil, paramError("acp_session_id", errors.New("must not be empty (leave it out for a session bound to no ACP session)"))
		}
		rec.ACPSessionID = *p.ACPSessionID
	}
	if _, err := escalate.LoadGuard(rec.Guard); err != nil {
		return nil, paramError("guard", err)
	}
	rec.SessionID = p.SessionID
	if rec.SessionID == "" {
		rec.SessionID = newID("s-")
	}
	if rec.EnvironmentID == "" {
		rec.EnvironmentID = rec.SessionID
	}
	if rec.Preset == "" {
		rec.Preset = s.table.Derive(rec.SandboxMode, rec.ApprovalPolicy, "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed[rec.SessionID] {
		e := newError(CodeConflict, KindConflict, "session %q was closed: a session id is not used again", rec.SessionID)
		e.Data.SessionID = rec.SessionID
		return nil, e
	}
	if s.sessions[rec.SessionID] != nil {
		e := newError(CodeConflict, KindConflict, "session %q is already open", rec.SessionID)
		e.Data.SessionID = rec.SessionID
		return nil, e
	}
	log, err := s.opt.OpenLog(rec.SessionID)
	if err != nil {
		return nil, asError(fmt.Errorf("open the session's log: %w", err))
	}
	sess := &session{id: rec.SessionID, log: log, st: journal.NewState(rec.SessionID)}
	if err := sess.append(rec); err != nil {
		return nil, asError(err)
	}
	s.sessions[sess.id] = sess
	s.opt.Metrics.session(+1) // metrics: sessions open
	s.changed.fire()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	f := sess.factsLocked(s.table)
	return &f, nil
}

// childFacts pins a child session's facts: only the parent's explicit
// session sandbox override (never its grants, one-shot or stored), the
// parent's guard, and approval policy never (escalate.ForChild).
func (s *Server) childFacts(rec *journal.SessionOpened, p openParams) *Error {
	if p.Preset != nil || p.SandboxMode != nil {
		field := "preset"
		if p.SandboxMode != nil {
			field = "sandbox_mode"
		}
		return paramError(field, errors.New("a child session takes its sandbox mode from its parent (parent_session_id)"))
	}
	parent, e := s.lookup(p.ParentSessionID)
	if e != nil {
		if e.Code == CodeUnknownSession {
			e.Data.Field = "parent_session_id"
		}
		return e
	}
	parent.mu.Lock()
	pst := parent.st
	pctx := escalate.CallContext{DefaultMode: rec.SandboxMode, ApprovalPolicy: pst.Policy}
	if pst.ExplicitMode {
		m := pst.Mode
		pctx.SessionMode = &m
	}
	parentGuard := pst.Opened.Guard
	parent.mu.Unlock()
	if p.Guard != "" && p.Guard != parentGuard {
		return paramError("guard", errors.New("a child session keeps its parent's guard"))
	}
	child := escalate.ForChild(pctx)
	child.DefaultMode = rec.SandboxMode
	rec.SandboxMode, rec.ApprovalPolicy, rec.Guard = child.StandingMode(), child.ApprovalPolicy, parentGuard
	rec.ExplicitMode = child.SessionMode != nil
	return nil
}

type presetParams struct {
	SessionID string `json:"session_id"`
	Key       string `json:"key"`
}

// setPreset records the intent, then one record per knob that really
// changes, then changes them. "custom" is never selectable.
func (s *Server) setPreset(params json.RawMessage) (any, *Error) {
	var p presetParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	if p.Key == "" {
		return nil, required("key")
	}
	pr, err := s.table.Select(p.Key)
	if err != nil {
		return nil, paramError("key", err)
	}
	// The writer's lock from the knobs read to the records written: the
	// knob/changed records say what changed from.
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	if e := sess.goneLocked(); e != nil {
		return nil, e
	}
	if sess.childLocked() && pr.ApprovalPolicy != profiles.ApprovalNever {
		return nil, paramError("key", fmt.Errorf("preset %s has approval policy %s: a child session's is pinned to never", pr.Key, pr.ApprovalPolicy))
	}
	if err := sess.appendLocked(journal.PresetIntent{Key: pr.Key}); err != nil {
		return nil, asError(err)
	}
	if mode := sess.st.Mode; pr.SandboxMode != mode {
		if err := sess.appendLocked(journal.KnobChanged{Knob: journal.KnobSandboxMode, From: mode.String(), To: pr.SandboxMode.String()}); err != nil {
			return nil, asError(err)
		}
	}
	if policy := sess.st.Policy; pr.ApprovalPolicy != policy {
		if err := sess.appendLocked(journal.KnobChanged{Knob: journal.KnobApprovalPolicy, From: policy.String(), To: pr.ApprovalPolicy.String()}); err != nil {
			return nil, asError(err)
		}
	}
	s.changed.fire()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.factsLocked(s.table), nil
}

type sessionParams struct {
	SessionID string `json:"session_id"`
}

type permissionsResult struct {
	Presets []profiles.Preset `json:"presets"`
	Default string            `json:"default"`
	// Current is the session's knobs and the preset they derive.
	Current facts `json:"current"`
	// Selectable says which presets the session may select (a child's
	// approval policy is pinned).
	Selectable []string `json:"selectable"`
	// TurnID is the session's open turn ("" when none): a client that
	// reconnects learns whether to turn/end it or begin one.
	TurnID string `json:"turn_id,omitempty"`
}

func (s *Server) permissions(params json.RawMessage) (any, *Error) {
	var p sessionParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	return s.permissionsOf(sess), nil
}

// permissionsOf is session/permissions' result for sess (the browser
// panel's selector too).
func (s *Server) permissionsOf(sess *session) permissionsResult {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	res := permissionsResult{Presets: s.table.List(), Default: s.table.Default().Key, Current: sess.factsLocked(s.table), Selectable: []string{},
		TurnID: sess.st.OpenTurn()}
	for _, pr := range res.Presets {
		if !sess.childLocked() || pr.ApprovalPolicy == profiles.ApprovalNever {
			res.Selectable = append(res.Selectable, pr.Key)
		}
	}
	return res
}

type turnResult struct {
	TurnID string `json:"turn_id"`
}

func (s *Server) beginTurn(params json.RawMessage) (any, *Error) {
	var p sessionParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	if e := sess.goneLocked(); e != nil {
		return nil, e
	}
	if open := sess.st.OpenTurn(); open != "" {
		e := newError(CodeConflict, KindConflict, "session %s already has turn %s open (turn/end first)", sess.id, open)
		e.Data.SessionID, e.Data.TurnID = sess.id, open
		return nil, e
	}
	id := newID("t-")
	if err := sess.appendLocked(journal.TurnBegun{TurnID: id}); err != nil {
		return nil, asError(err)
	}
	return turnResult{TurnID: id}, nil
}

type endTurnParams struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
}

// endTurn closes the turn: its grants end, and approvals still pending in
// it settle cancelled.
func (s *Server) endTurn(params json.RawMessage) (any, *Error) {
	var p endTurnParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	if p.TurnID == "" {
		return nil, required("turn_id")
	}
	// The writer's lock from the check to the record: a turn ended
	// meanwhile by another request is not the open turn any more.
	sess.logMu.Lock()
	defer sess.logMu.Unlock()
	if _, e := sess.openTurnLocked(p.TurnID); e != nil {
		return nil, e
	}
	if err := sess.appendLocked(journal.TurnEnded{TurnID: p.TurnID}); err != nil {
		return nil, asError(err)
	}
	return nil, nil
}
