package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/escalate"
)

// Question is one approval question as an Answerer sees it: what
// escalate.Decide asks about (with its fresh approval id), and where in
// the server it comes from.
type Question struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Command is the call's argv, only for a shell call whose argv is
	// what runs (no "shell" spec rewrites it, no fs change): nil
	// otherwise, never a guess.
	Command []string `json:"command,omitempty"`
	// ACPSessionID is the ACP session the session is bound to
	// (session/open's acp_session_id), "" when none: only then does the
	// ACP answerer claim the question.
	ACPSessionID string `json:"acp_session_id,omitempty"`
	escalate.ApprovalRequest
}

// toolName is the question's tool as the records and the answerers name
// it: an exec call without one is a shell call.
func (q Question) toolName() string {
	if q.Tool == "" {
		return "shell"
	}
	return q.Tool
}

// Answerer answers approval questions for the server. The outcome
// vocabulary is closed: only escalate.AllowedOnce lets the call proceed,
// and anything else (rejected, cancelled, unavailable, an unknown word, an
// error) denies it.
//
// Answer must honour ctx: it is cancelled when the call is cancelled, its
// turn ends or its client goes away. The server does not wait for an
// answerer past that: the approval settles cancelled at once and an answer
// that comes later is dropped. Answer may be called concurrently for
// different questions.
//
// Implementations: ApproverAnswerer (an escalate.Approver), and the
// entries of a Waterfall (the Claimers ClientAnswerer, TerminalAnswerer
// and Always, around the --approver program), itself an Answerer.
type Answerer interface {
	Answer(ctx context.Context, q Question) (escalate.Outcome, error)
}

// AnswererFunc adapts a function to Answerer (tests, in-process runtimes).
type AnswererFunc func(ctx context.Context, q Question) (escalate.Outcome, error)

func (f AnswererFunc) Answer(ctx context.Context, q Question) (escalate.Outcome, error) {
	return f(ctx, q)
}

// ApproverAnswerer answers with an escalate.Approver: CommandApprover
// (sbx serve --approver CMD) or TerminalApprover.
type ApproverAnswerer struct{ Approver escalate.Approver }

func (a ApproverAnswerer) Answer(ctx context.Context, q Question) (escalate.Outcome, error) {
	return a.Approver.Approve(ctx, q.ApprovalRequest)
}

// askedRecord and decidedRecord are the approval records' data. The asked
// record has no copy of the call's arguments: call_id links it to the
// call/started record, which has them.
type askedRecord struct {
	ApprovalID string `json:"approval_id"`
	SessionID  string `json:"session_id"`
	TurnID     string `json:"turn_id"`
	ToolName   string `json:"tool_name"`
	CallID     string `json:"call_id,omitempty"`
	Reason     string `json:"reason"`
}

type decidedRecord struct {
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`
}

// approval is the server side of the approvals of one call: an
// escalate.Approver for call.Prepare that records each question and
// answer in the session's log and settles the race between the answerer
// and cancellation itself, so what the log says is what happened.
type approval struct {
	sess   *session
	turnID string
	callID string
	// command is the call's argv when it is shown (Question.Command).
	command  []string
	answerer Answerer
	// timeout bounds each ask (Options.AnswerTimeout).
	timeout time.Duration
	// ctx is done when the call is cancelled, its turn ends or its client
	// goes away.
	ctx context.Context
	// hooks are the test's (nil otherwise).
	hooks *Hooks

	mu   sync.Mutex
	idle *sync.Cond // signalled when inflight drops to 0
	// asked is set once a question was recorded as asked; last is the
	// outcome of the last one.
	asked bool
	last  escalate.Outcome
	// inflight counts asks between their start and their decided record;
	// once closed, no ask starts any more.
	inflight int
	closed   bool
}

// errLog marks an approval that failed because its record could not be
// made durable: denied, as unavailable.
var errLog = errors.New("approval log")

// Approve implements escalate.Approver. escalate.Decide may stop waiting
// when its own context ends; Approve still finishes its decided record,
// and wait waits for that.
func (a *approval) Approve(_ context.Context, req escalate.ApprovalRequest) (escalate.Outcome, error) {
	defer a.done()
	ctx := a.ctx
	if !a.start() || ctx.Err() != nil {
		// Cancelled before the answerer was dispatched: cancelled,
		// without asking (and nothing to record: nothing was asked).
		return escalate.Cancelled, nil
	}
	asked := askedRecord{ApprovalID: req.ApprovalID, SessionID: a.sess.id, TurnID: a.turnID, ToolName: Question{ApprovalRequest: req}.toolName(),
		CallID: a.callID, Reason: req.Justification}
	if err := a.sess.append(RecApprovalAsked, asked); err != nil {
		return escalate.Unavailable, fmt.Errorf("%w: %v", errLog, err)
	}
	a.mu.Lock()
	a.asked = true
	a.mu.Unlock()
	a.sess.noteAsked(asked)
	outcome := a.answer(ctx, req)
	a.sess.noteDecided(req.ApprovalID)
	if err := a.sess.append(RecApprovalDecided, decidedRecord{ApprovalID: req.ApprovalID, Outcome: string(outcome)}); err != nil {
		// The call proceeds only once the decided record is durable.
		return escalate.Unavailable, fmt.Errorf("%w: %v", errLog, err)
	}
	a.mu.Lock()
	a.last = outcome
	a.mu.Unlock()
	if a.hooks != nil && a.hooks.Decided != nil {
		a.hooks.Decided(a.callID, outcome)
	}
	return outcome, nil
}

// answer races the answerer against ctx and the answer timeout.
// Cancellation settles cancelled at once, the timeout unavailable; an
// answer that arrives later goes into the buffered channel and is dropped.
// Whatever is not an exact known outcome is unavailable.
func (a *approval) answer(ctx context.Context, req escalate.ApprovalRequest) escalate.Outcome {
	if a.answerer == nil {
		return escalate.Unavailable
	}
	if a.hooks != nil && a.hooks.Asking != nil {
		a.hooks.Asking(a.callID)
	}
	type result struct {
		o   escalate.Outcome
		err error
	}
	timeout := a.timeout
	if timeout <= 0 {
		timeout = DefaultAnswerTimeout
	}
	askCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("answerer panicked: %v", r)}
			}
		}()
		o, err := a.answerer.Answer(askCtx, Question{SessionID: a.sess.id, TurnID: a.turnID, Command: a.command, ACPSessionID: a.sess.acpSessionID, ApprovalRequest: req})
		ch <- result{o, err}
	}()
	select {
	case <-askCtx.Done():
		if ctx.Err() == nil {
			return escalate.Unavailable // the answerer hung: timed out
		}
		return escalate.Cancelled
	case r := <-ch:
		if ctx.Err() != nil {
			return escalate.Cancelled // answered, but after cancellation
		}
		if askCtx.Err() != nil {
			return escalate.Unavailable // answered, but after the timeout
		}
		switch {
		case r.err != nil:
			return escalate.Unavailable
		case r.o == escalate.AllowedOnce, r.o == escalate.Rejected, r.o == escalate.Cancelled, r.o == escalate.Unavailable:
			return r.o
		}
		return escalate.Unavailable
	}
}

// start counts an ask in; false once the call is past its approvals.
func (a *approval) start() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.idle == nil {
		a.idle = sync.NewCond(&a.mu)
	}
	a.inflight++
	return !a.closed
}

func (a *approval) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inflight--; a.inflight == 0 && a.idle != nil {
		a.idle.Broadcast()
	}
}

// wait waits for an ask in progress to have its decided record, then
// closes the call to asks, and says whether any question was asked and
// the last outcome.
func (a *approval) wait() (asked bool, last escalate.Outcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for a.inflight > 0 {
		a.idle.Wait()
	}
	return a.asked, a.last
}
