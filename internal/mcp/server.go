package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/serve"
)

// Options configure the MCP server.
type Options struct {
	// Connect makes the connection of one MCP session to the session
	// server every call goes through (an sbx serve child: Dial, or a
	// Server in-process: Server.Local); handler answers its
	// approval/requested (nil: the client is not asked).
	Connect func(ctx context.Context, handler serve.LocalHandler) (*serve.Local, error)
	// Preset, else SandboxMode and ApprovalPolicy, are the sbx session's
	// knobs (all empty: the deployment default).
	Preset, SandboxMode, ApprovalPolicy string
	// Cwd is the sbx session's cwd (a call's relative cwd is against it).
	Cwd string
	// Roots are the directories the sessions may work in (absolute,
	// clean; nil: Cwd alone), narrowed by the client's MCP roots.
	Roots []string
	// ExcludeTmp: under workspace-write, /tmp and $TMPDIR are not
	// writable either (exclude_tmp, exclude_tmpdir): the roots alone are.
	ExcludeTmp bool
	// NoElicit: never ask through MCP elicitation, only the configured
	// answerers.
	NoElicit bool
	// Version is the server's version in initialize.
	Version string
}

// Server is sbx as an MCP server: one sbx session per MCP session, each
// on an in-process connection to Options.Serve.
type Server struct {
	opt Options
	sdk *sdk.Server

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
	// open are the sessions' connections not yet closed.
	open sync.WaitGroup
}

// Wait waits for the connections of the MCP sessions that ended to close:
// their running calls killed and their records written.
func (s *Server) Wait() { s.open.Wait() }

// session is the sbx session of one MCP session: its connection, its
// session id and the turn it keeps open for its life (the grants of
// `turn` scope last as long as the MCP session).
type session struct {
	ready chan struct{}
	err   error
	local *serve.Local
	id    string
	turn  string
	// roots are the session's (narrow), cwd its default cwd, and
	// writable says the roots are its writable roots (workspace-write).
	roots    []string
	cwd      string
	writable bool
	calls    int
	// rootsStale: the client said its roots changed
	// (notifications/roots/list_changed); the next call lists them again
	// before it runs.
	rootsStale bool
	mu         sync.Mutex
}

// New makes the MCP server with its tools: shell, apply_patch and the fs
// operations.
func New(opt Options) (*Server, error) {
	s := &Server{opt: opt, sessions: map[*sdk.ServerSession]*session{}}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "sbx", Version: opt.Version}, &sdk.ServerOptions{
		Instructions: "Run commands and change files inside the sbx sandbox. A call the sandbox denied is an error result whose structuredContent has denied: true, the denials and a retry: call again with the retry's escalation fields (sandbox_permissions, additional_permissions, justification) to ask for what was denied.",
		Capabilities: &sdk.ServerCapabilities{},
		// The notification is handled before the client's next request
		// (the SDK handles notifications in order): the call after it
		// sees the new roots.
		RootsListChangedHandler: func(_ context.Context, req *sdk.RootsListChangedRequest) { s.rootsChanged(req.Session) },
	})
	shell, err := schemaOf(shellKeys)
	if err != nil {
		return nil, err
	}
	s.sdk.AddTool(&sdk.Tool{Name: "shell", InputSchema: shell, Description: "Run a command (argv in command) or a script (shell.script) in the sandbox; the result has exit_code, stdout, stderr, and for a denial denials and retry."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args, err := arguments(req)
			if err != nil {
				return nil, err
			}
			if sh, ok := args["shell"].(map[string]any); ok && sh["kind"] == nil {
				sh["kind"] = "sh"
			}
			return s.exec(ctx, req.Session, args, args)
		})
	for _, op := range fsop.Kinds {
		schema, err := fsSchema(op)
		if err != nil {
			return nil, err
		}
		s.sdk.AddTool(&sdk.Tool{Name: toolName(op), InputSchema: schema, Description: "sbx fs " + string(op) + ": change files inside the sandbox's writable roots (docs/fs.md); the result has ok, and for a denial denials and retry."},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				args, err := arguments(req)
				if err != nil {
					return nil, err
				}
				return s.exec(ctx, req.Session, fsRequest(op, args), args)
			})
	}
	return s, nil
}

// SDK is the server of the MCP SDK, to Run on a transport.
func (s *Server) SDK() *sdk.Server { return s.sdk }

func arguments(req *sdk.CallToolRequest) (map[string]any, error) {
	args := map[string]any{}
	if len(req.Params.Arguments) == 0 {
		return args, nil
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return args, nil
}

// exec runs one tool call as an exec of the MCP session's sbx session.
// args are the tool's own arguments, which a retry repeats.
func (s *Server) exec(ctx context.Context, ss *sdk.ServerSession, req, args map[string]any) (*sdk.CallToolResult, error) {
	args = clone(args)
	sess, err := s.session(ss)
	if err != nil {
		return nil, err
	}
	roots, dflt, err := s.currentRoots(ctx, ss, sess)
	if err != nil {
		return refusal(&serve.Error{Message: err.Error(), Data: serve.ErrorData{Kind: serve.KindInvalidParams, Field: "cwd"}}), nil
	}
	sess.mu.Lock()
	sess.calls++
	callID := fmt.Sprintf("mcp-%d", sess.calls)
	sess.mu.Unlock()
	req["session_id"], req["turn_id"], req["call_id"] = sess.id, sess.turn, callID
	// exec wants a cwd; a tool's is the session's, or relative to it,
	// and inside one of the session's roots.
	cwd, _ := req["cwd"].(string)
	switch {
	case cwd == "":
		cwd = dflt
	case !filepath.IsAbs(cwd):
		cwd = filepath.Join(sess.cwd, cwd)
	}
	cwd = filepath.Clean(cwd)
	if !inside(cwd, roots) {
		return refusal(&serve.Error{Message: fmt.Sprintf("cwd: %s is outside the session's roots %v", cwd, roots),
			Data: serve.ErrorData{Kind: serve.KindInvalidParams, Field: "cwd"}}), nil
	}
	req["cwd"] = cwd
	if sess.writable {
		req["writable_roots"] = roots
		if s.opt.ExcludeTmp {
			req["exclude_tmp"], req["exclude_tmpdir"] = true, true
		}
	}
	var result json.RawMessage
	err = sess.local.Call(ctx, "exec", req, &result)
	var rpcErr *serve.Error
	if errors.As(err, &rpcErr) {
		return refusal(rpcErr), nil
	}
	if err != nil {
		return nil, err
	}
	out, denied, err := structured(result)
	if err != nil {
		return nil, err
	}
	retryArguments(out, args)
	return toolResult(out, denied), nil
}

// refusal is the tool result of an exec the server refused: an approval
// denied (denied, with its outcome), a cancelled call, bad arguments.
// Each is an error result; only a denial says denied.
func refusal(e *serve.Error) *sdk.CallToolResult {
	out := map[string]any{"error": map[string]any{"kind": e.Data.Kind, "message": e.Message}, "denied": e.Data.Kind == serve.KindDenied}
	if e.Data.Outcome != "" {
		out["outcome"] = e.Data.Outcome
	}
	if e.Data.Field != "" {
		out["error"].(map[string]any)["field"] = e.Data.Field
	}
	return toolResult(out, true)
}

func toolResult(out map[string]any, isError bool) *sdk.CallToolResult {
	text, _ := json.Marshal(out)
	return &sdk.CallToolResult{IsError: isError, StructuredContent: out, Content: []sdk.Content{&sdk.TextContent{Text: summary(out) + "\n" + string(text)}}}
}

// summary is the first line of a result's text for a model that reads
// only content: what happened, in words.
func summary(out map[string]any) string {
	switch {
	case out["denied"] == true && out["retry"] != nil:
		return "denied by the sandbox: to ask for what was denied, call again with the escalation fields of retry"
	case out["denied"] == true:
		return fmt.Sprintf("denied (%v)", out["outcome"])
	case out["error"] != nil && out["exit_code"] == nil && out["ok"] == nil:
		return fmt.Sprintf("refused: %v", out["error"])
	case out["exit_code"] != nil:
		return fmt.Sprintf("exit code %v", out["exit_code"])
	}
	return fmt.Sprintf("ok: %v", out["ok"])
}

// session is ss's sbx session, opened at its first call: a connection
// that answers approvals by elicitation when the client can be asked,
// session/open with the server's knobs, and a turn.
func (s *Server) session(ss *sdk.ServerSession) (*session, error) {
	s.mu.Lock()
	sess := s.sessions[ss]
	if sess != nil {
		s.mu.Unlock()
		<-sess.ready
		return sess, sess.err
	}
	sess = &session{ready: make(chan struct{})}
	s.sessions[ss] = sess
	s.mu.Unlock()
	defer close(sess.ready)
	sess.err = s.openSession(ss, sess)
	return sess, sess.err
}

func (s *Server) openSession(ss *sdk.ServerSession, sess *session) error {
	bg := context.Background()
	elicit := !s.opt.NoElicit && ss.InitializeParams() != nil && ss.InitializeParams().Capabilities != nil &&
		ss.InitializeParams().Capabilities.Elicitation != nil
	// The connection lives as long as the MCP session: its end kills the
	// session's running calls and settles its pending approvals.
	ctx, cancel := context.WithCancel(context.Background())
	var handler serve.LocalHandler
	if elicit {
		handler = func(hctx context.Context, method string, params json.RawMessage) (any, error) {
			if method != "approval/requested" {
				return nil, fmt.Errorf("%s: not asked for", method)
			}
			return s.elicit(hctx, ss, sess, params)
		}
	}
	local, err := s.opt.Connect(ctx, handler)
	if err != nil {
		cancel()
		return fmt.Errorf("sbx session: connect: %w", err)
	}
	sess.local = local
	s.open.Add(1)
	go func() {
		defer s.open.Done()
		ss.Wait()
		sess.local.Close()
		cancel()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	if err := sess.local.Call(bg, "initialize", map[string]any{"capabilities": map[string]any{"approvals": elicit}}, nil); err != nil {
		return fmt.Errorf("sbx session: initialize: %w", err)
	}
	roots, err := s.listRoots(bg, ss)
	if err != nil {
		return err
	}
	sess.roots, sess.cwd = roots, filepath.Clean(s.opt.Cwd)
	if !inside(sess.cwd, roots) {
		sess.cwd = roots[0]
	}
	open := map[string]any{"cwd": sess.cwd}
	switch {
	case s.opt.Preset != "":
		open["preset"] = s.opt.Preset
	case s.opt.SandboxMode != "" || s.opt.ApprovalPolicy != "":
		open["sandbox_mode"], open["approval_policy"] = s.opt.SandboxMode, s.opt.ApprovalPolicy
	}
	var opened struct {
		SessionID   string `json:"session_id"`
		SandboxMode string `json:"sandbox_mode"`
	}
	if err := sess.local.Call(bg, "session/open", open, &opened); err != nil {
		return fmt.Errorf("sbx session: open: %w", err)
	}
	sess.id = opened.SessionID
	sess.writable = opened.SandboxMode == "workspace-write"
	var turn struct {
		TurnID string `json:"turn_id"`
	}
	if err := sess.local.Call(bg, "turn/begin", map[string]any{"session_id": sess.id}, &turn); err != nil {
		return fmt.Errorf("sbx session: turn: %w", err)
	}
	sess.turn = turn.TurnID
	return nil
}

// The choices of an approval's elicitation form.
const (
	allowOnce    = "allow-once"
	allowSession = "allow-for-session"
	reject       = "reject"
)

// elicit asks the MCP client's user one approval: the question is the
// escalate.ApprovalRequest the server sends (what is requested, the
// command, the justification). Accepting allow-for-session also stores
// the additional permissions asked for as a session grant
// (grants/apply), which the session's next calls run under without
// asking. Declined, cancelled, or any other answer is rejected.
func (s *Server) elicit(ctx context.Context, ss *sdk.ServerSession, sess *session, params json.RawMessage) (any, error) {
	var q struct {
		SessionID             string          `json:"session_id"`
		ApprovalID            string          `json:"approval_id"`
		Command               []string        `json:"command"`
		Reason                string          `json:"reason"`
		TargetMode            string          `json:"target_mode"`
		AdditionalPermissions json.RawMessage `json:"additional_permissions"`
		NewPermissions        json.RawMessage `json:"new_permissions"`
		CapAdd                []string        `json:"cap_add"`
		Cwd                   string          `json:"cwd"`
		Tool                  string          `json:"tool"`
	}
	if err := json.Unmarshal(params, &q); err != nil {
		return nil, fmt.Errorf("approval/requested: %w", err)
	}
	answer := func(outcome string) any {
		return map[string]any{"session_id": q.SessionID, "approval_id": q.ApprovalID, "outcome": outcome}
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "sbx: allow this %s call", orDefault(q.Tool, "shell"))
	if len(q.Command) > 0 {
		fmt.Fprintf(&msg, " (%s)", strings.Join(q.Command, " "))
	}
	if q.Cwd != "" {
		fmt.Fprintf(&msg, " in %s", q.Cwd)
	}
	msg.WriteString("?\n")
	if q.TargetMode != "" {
		fmt.Fprintf(&msg, "It asks to run in %s.\n", q.TargetMode)
	}
	if len(q.NewPermissions) > 0 && string(q.NewPermissions) != "null" {
		fmt.Fprintf(&msg, "It asks for: %s\n", q.NewPermissions)
	}
	if len(q.CapAdd) > 0 {
		fmt.Fprintf(&msg, "It asks for capabilities: %s\n", strings.Join(q.CapAdd, ", "))
	}
	if q.Reason != "" {
		fmt.Fprintf(&msg, "Justification: %s\n", q.Reason)
	}
	choices := []string{allowOnce, reject}
	grantable := len(q.AdditionalPermissions) > 0 && string(q.AdditionalPermissions) != "null" && q.TargetMode == ""
	if grantable {
		choices = []string{allowOnce, allowSession, reject}
	}
	res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: msg.String(), RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{"decision": map[string]any{"type": "string", "enum": choices,
			"description": "allow-once runs this call; allow-for-session also grants what it asks for to the calls after it in this session"}},
		"required": []string{"decision"},
	}})
	if err != nil {
		// Not answered: the server settles it (cancelled, or timed out).
		return nil, fmt.Errorf("elicitation: %w", err)
	}
	if res.Action != "accept" {
		return answer("rejected"), nil
	}
	switch res.Content["decision"] {
	case allowOnce:
		return answer("allowed-once"), nil
	case allowSession:
		if !grantable {
			return answer("rejected"), nil
		}
		grant := map[string]any{"session_id": q.SessionID, "requested": q.AdditionalPermissions,
			"response": map[string]any{"granted": q.AdditionalPermissions, "scope": "session"}}
		if err := sess.local.Call(ctx, "grants/apply", grant, nil); err != nil {
			return nil, fmt.Errorf("grants/apply: %w", err)
		}
		return answer("allowed-once"), nil
	}
	return answer("rejected"), nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
