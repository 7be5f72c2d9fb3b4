package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// execParams are exec's params: the sbx exec request, plus where in the
// server the call belongs. call_id is the request's own field, required
// here: exec/cancel and the records name the call by it.
type execParams struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	wire.Request
}

// execResult is exec's result: sbx exec's, plus aborted when a
// cancellation killed the command after it started.
type execResult struct {
	*wire.Result
	Aborted bool `json:"aborted,omitempty"`
}

type execFSResult struct {
	*wire.FSResult
	Aborted bool `json:"aborted,omitempty"`
}

// runningCall is an exec in flight.
type runningCall struct {
	id     string // the call id
	reqID  string // the JSON-RPC id, as sent
	sess   *session
	cancel context.CancelFunc
	// done is closed when the call is unregistered: its records are
	// written (session/close waits for it).
	done chan struct{}
}

// sessionFields are the exec request fields the session owns: a call of
// a session runs with the session's knobs, guard, grants and answerer.
var sessionFields = []struct {
	name string
	set  func(r *wire.Request) bool
	why  string
}{
	{"sandbox_mode", func(r *wire.Request) bool { return r.SandboxMode != nil }, "the session's (session/set_preset); ask for more with sandbox_permissions"},
	{"approval_policy", func(r *wire.Request) bool { return r.ApprovalPolicy != nil }, "the session's (session/set_preset)"},
	{"approver", func(r *wire.Request) bool { return r.Approver != nil }, "the server's answerer answers"},
	{"guard", func(r *wire.Request) bool { return r.Guard != "" }, "the session's (session/open)"},
	{"grants", func(r *wire.Request) bool { return r.Grants != nil }, "the server applies the grants stored with grants/apply"},
}

// withoutEnv splits the exec params (already decoded strictly: one JSON
// object, no duplicate keys) into the params without "env" and the names
// "env" set, so that no value of it reaches the log.
func withoutEnv(params json.RawMessage) (json.RawMessage, []string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return nil, nil, err
	}
	raw, ok := fields["env"]
	if !ok {
		return params, nil, nil
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, err
	}
	delete(fields, "env")
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, err
	}
	return out, slices.Sorted(maps.Keys(env)), nil
}

// exec replies itself: its command's output goes out as exec/output
// notifications before the result, and the command runs off the
// connection's reader (r.later). The dispatcher drops an exec sent as a
// notification (needsID): without an id there is nobody to give the
// result to.
func (c *conn) exec(ctx context.Context, params json.RawMessage, r *replier) error {
	steptrace.Begin()
	var p execParams
	if e := decodeParams(params, &p); e != nil {
		return e
	}
	steptrace.Mark("read and decode the request")
	sess, e := c.srv.lookup(p.SessionID)
	if e != nil {
		return e
	}
	if p.TurnID == "" {
		return required("turn_id")
	}
	if p.CallID == "" {
		return required("call_id")
	}
	for _, f := range sessionFields {
		if f.set(&p.Request) {
			return paramError(f.name, errors.New("not taken by the server: "+f.why))
		}
	}
	t, e := sess.openTurn(p.TurnID)
	if e != nil {
		return e
	}
	env := p.EnvironmentID
	if env == "" {
		env = sess.opened().EnvironmentID
	}
	ctx, cancel := context.WithCancel(ctx)
	rc := &runningCall{id: p.CallID, reqID: string(r.id), sess: sess, cancel: cancel, done: make(chan struct{})}
	if e := c.register(rc); e != nil {
		cancel()
		return e
	}
	// call/started takes its place in the log now and is made durable
	// while the call is resolved: the command waits for it (Dispatch). A
	// call refused before is answered without waiting for it (nothing
	// ran); its records reach the disk in their order, with the next
	// group commit.
	var started func() error
	logged, envNames, err := withoutEnv(params)
	if err == nil {
		started, err = sess.queue(journal.CallStarted{CallID: p.CallID, TurnID: p.TurnID, EnvironmentID: env, Request: logged, EnvNames: envNames})
	}
	if err != nil {
		c.unregister(rc)
		cancel()
		return asError(err)
	}
	steptrace.Mark("check the session, queue call/started")
	r.later(func() {
		defer c.unregister(rc)
		defer cancel()
		res, e := c.run(ctx, sess, t, env, &p, params, started)
		steptrace.Mark("wait for the launch's cleanup")
		if e != nil {
			r.reply(nil, e)
		} else {
			r.reply(res, nil)
		}
		steptrace.Mark("write the answer")
		steptrace.Flush()
	})
	return nil
}

// register makes the call cancellable by its call id and request id.
func (c *conn) register(rc *runningCall) *Error {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if rc.sess.closing {
		// Closed since exec looked it up.
		return unknownSession(rc.sess.id)
	}
	if c.srv.calls[rc.id] != nil {
		e := newError(CodeConflict, KindConflict, "call %q is already running", rc.id)
		e.Data.CallID = rc.id
		return e
	}
	c.srv.calls[rc.id] = rc
	c.mu.Lock()
	c.requests[rc.reqID] = rc
	c.mu.Unlock()
	return nil
}

func (c *conn) unregister(rc *runningCall) {
	c.srv.mu.Lock()
	if c.srv.calls[rc.id] == rc {
		delete(c.srv.calls, rc.id)
	}
	c.srv.mu.Unlock()
	c.mu.Lock()
	if c.requests[rc.reqID] == rc {
		delete(c.requests, rc.reqID)
	}
	c.mu.Unlock()
	close(rc.done)
}

// errCancelled stops a cancelled call at one of its checks: before policy,
// and before dispatch.
var errCancelled = errors.New("cancelled")

// run runs one exec call and finishes its record. ctx ends when the call
// is cancelled or its client goes away; approvals also end with the turn
// and at the server's shutdown. started returns once the call/started
// record is durable: nothing is dispatched before.
func (c *conn) run(ctx context.Context, sess *session, t *turn, env string, p *execParams, raw json.RawMessage, started func() error) (any, *Error) {
	hooks := c.srv.opt.Hooks
	began := c.srv.opt.Metrics.callStarted() // metrics: in flight, latencies
	// What the launch leaves to clean up after the command (its
	// placeholders, its control groups) runs while call/finished is
	// written; the answer waits for both.
	var cleanup sync.WaitGroup
	defer cleanup.Wait()
	askCtx, stopAsk := context.WithCancel(ctx)
	defer stopAsk()
	stopTurn := context.AfterFunc(t.ctx, stopAsk)
	defer stopTurn()
	stopServer := context.AfterFunc(c.srv.asking, stopAsk)
	defer stopServer()
	ap := &approval{sess: sess, turnID: p.TurnID, callID: p.CallID, answerer: c.srv.opt.Answerer,
		timeout: c.srv.opt.AnswerTimeout, ctx: askCtx, hooks: hooks, metrics: c.srv.opt.Metrics}
	var approver escalate.Approver = ap
	if hooks != nil && hooks.BeforeAsk != nil {
		approver = escalate.ApproverFunc(func(ctx context.Context, req escalate.ApprovalRequest) (escalate.Outcome, error) {
			hooks.BeforeAsk(p.CallID)
			return ap.Approve(ctx, req)
		})
	}
	dispatched := false
	resp, err := c.execCall(ctx, sess, env, p, raw, approver, &cleanup, func() error {
		if err := started(); err != nil {
			return asError(err)
		}
		if hooks != nil && hooks.Dispatching != nil {
			hooks.Dispatching(p.CallID)
		}
		if ctx.Err() != nil {
			return errCancelled
		}
		dispatched = true
		c.srv.opt.Metrics.launched(began) // metrics: launch latency
		return nil
	})
	asked, decided := ap.wait()
	fin := journal.CallFinished{CallID: p.CallID}
	var result any
	var e *Error
	switch {
	case err != nil && ctx.Err() != nil && !dispatched && (errors.Is(err, errCancelled) || isCancelledDenial(err)):
		fin.Outcome = OutcomeCancelled
		if asked {
			fin.Outcome = OutcomeAbortedBeforeDispatch
		}
		e = newError(CodeCancelled, KindCancelled, "exec %s cancelled before its command started", p.CallID)
		e.Data.Outcome, e.Data.CallID = fin.Outcome, p.CallID
		if asked && decided == escalate.AllowedOnce {
			e.Message += " (its approval had been allowed)"
		}
	case err != nil:
		e = refusalError(err)
		e.Data.CallID = p.CallID
		fin.Outcome, fin.Error = "refused", e.Message
		if e.Data.Kind == KindDenied {
			fin.Outcome = "denied"
		}
	default:
		code := resp.ExitCode()
		fin.Outcome, fin.ExitCode = "exited", &code
		aborted := ctx.Err() != nil && dispatched && killedBySignal(resp)
		if aborted {
			fin.Outcome = "aborted"
		}
		if resp.FS != nil {
			result = execFSResult{FSResult: resp.FS, Aborted: aborted}
		} else {
			result = execResult{Result: resp.Result, Aborted: aborted}
		}
	}
	// call/finished is written after the fact and gates nothing: the
	// answer does not wait for its fsync (the next group commit, at the
	// latest journal.LaterDelay after, makes it durable). A crash before
	// loses it, and Restore finishes the call "lost".
	c.srv.opt.Metrics.callFinished(began, sess, fin.Outcome, resp) // metrics: calls, denials, retries, downgrades
	steptrace.Mark("settle the approval, outcome")
	lerr := sess.later(fin)
	steptrace.Mark("log call/finished")
	if lerr != nil {
		// The call happened; its end could not be recorded. Say so rather
		// than acknowledge what the log does not hold.
		return nil, asError(fmt.Errorf("call %s finished (%s) but %w", p.CallID, fin.Outcome, lerr))
	}
	return result, e
}

// execCall makes the call p's request describes, sets what the session
// holds on it (the standing mode and approval policy, the guard, stored
// grants, the approver, the control paths: a request cannot name them),
// and hands it to run.Exec; dispatch is its last check before the command
// starts.
func (c *conn) execCall(ctx context.Context, sess *session, env string, p *execParams, raw json.RawMessage,
	approver escalate.Approver, cleanup *sync.WaitGroup, dispatch func() error) (wire.Response, error) {
	r, in, err := p.Request.Call(c.srv.opt.Env)
	if err != nil {
		return wire.Response{}, err
	}
	steptrace.Mark("resolve the request (wire)")
	if ctx.Err() != nil {
		return wire.Response{}, errCancelled
	}
	sess.mu.Lock()
	r.Mode, r.Escalation.ApprovalPolicy, r.Escalation.GuardPath = sess.st.Mode, sess.st.Policy, sess.st.Opened.Guard
	sess.mu.Unlock()
	r.Escalation.EnvironmentID = env
	r.Escalation.Grants = sess.grantsFor(env, p.TurnID)
	r.Escalation.Approver = approver
	r.Escalation.Control = withGuardFile(c.srv.opt.Control, r.Escalation.GuardPath)
	return run.Exec(ctx, &p.Request, r, in, run.Options{
		Raw: raw, Executable: c.srv.opt.Executable, Cleanup: cleanup, Dispatch: dispatch,
		Events: func(ev wire.OutputEvent) error { return c.notify("exec/output", ev) },
	})
}

// killedBySignal: the server relays no signals, so a kill "signal" is its
// own cancellation.
func killedBySignal(r wire.Response) bool {
	if r.FS != nil {
		return r.FS.KilledBy == "signal"
	}
	return r.Result.KilledBy == "signal"
}

type cancelExecParams struct {
	CallID string `json:"call_id"`
}

type cancelResult struct {
	// Cancelled is false when no call of that id is in flight (finished,
	// or never started): nothing happened.
	Cancelled bool `json:"cancelled"`
}

func (c *conn) cancelExec(_ context.Context, params json.RawMessage) (any, error) {
	var p cancelExecParams
	if e := decodeParams(params, &p); e != nil {
		return nil, e
	}
	if p.CallID == "" {
		return nil, required("call_id")
	}
	c.srv.mu.Lock()
	rc := c.srv.calls[p.CallID]
	c.srv.mu.Unlock()
	if rc != nil {
		rc.cancel()
	}
	return cancelResult{Cancelled: rc != nil}, nil
}

// cancelRequest is $/cancelRequest {id}: a notification; a request it
// names that is not (or no longer) in flight is ignored.
func (c *conn) cancelRequest(_ context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if e := decodeParams(params, &p); e != nil {
		return nil, e
	}
	if !goodID(p.ID) {
		return nil, paramError("id", errors.New("must be a string or a number"))
	}
	c.mu.Lock()
	rc := c.requests[string(p.ID)]
	c.mu.Unlock()
	if rc != nil {
		rc.cancel()
	}
	return cancelResult{Cancelled: rc != nil}, nil
}

// withGuardFile adds the session's guard file (guard: its path, "" the
// default) to c's read-only paths when it exists: every call loads it
// anew, so a command that rewrote it would loosen the calls after it.
func withGuardFile(c call.ControlPaths, guard string) call.ControlPaths {
	if guard == "" {
		guard = escalate.DefaultGuardPath
	}
	abs, err := filepath.Abs(guard)
	if err != nil {
		return c
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	} else {
		return c // none there: nothing to keep
	}
	return c.With(abs, "the session's guard file", false)
}
