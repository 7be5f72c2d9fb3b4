package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// Question is the one approval question (escalate.ApprovalRequest): what
// escalate asks about, with its fresh approval id, and where in the server
// it comes from (session_id, turn_id, acp_session_id; the ACP answerer
// claims only a question with an acp_session_id). Every answerer gets the
// same question.
type Question = escalate.ApprovalRequest

// toolName is the question's tool as the records and the answerers name
// it: an exec call without one is a shell call.
func toolName(q Question) string {
	if q.Tool == "" {
		return "shell"
	}
	return q.Tool
}

// Answerer is escalate's one answerer interface, as the server names it:
// it answers approval questions. The outcome vocabulary is closed: only
// escalate.AllowedOnce lets the call proceed, and anything else (rejected,
// cancelled, unavailable, an unknown word, an error) denies it.
//
// Approve must honour ctx: it is cancelled when the call is cancelled, its
// turn ends or its client goes away. The server does not wait for an
// answerer past that (escalate.Ask): the approval settles cancelled at once
// and an answer that comes later is dropped. Approve may be called
// concurrently for different questions.
//
// Implementations: any escalate.Approver (CommandApprover for sbx serve
// --approver CMD), and the entries of a Waterfall (the Claimers
// ClientAnswerer, TerminalAnswerer, WebAnswerer, ACPAnswerer and Always,
// around the --approver program), itself an Answerer.
type Answerer = escalate.Approver

// AnswererFunc adapts a function to Answerer (tests, in-process runtimes).
type AnswererFunc = escalate.ApproverFunc

// approval is the server side of the approvals of one call: an
// escalate.Approver for call.Prepare that records each question and
// answer in the session's log and settles the race between the answerer
// and cancellation itself, so what the log says is what happened.
type approval struct {
	sess     *session
	turnID   string
	callID   string
	answerer Answerer
	metrics  *Metrics
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

// Approve implements escalate.Approver. escalate.Obtain (through
// escalate.Ask) may stop waiting when its own context ends; Approve still finishes its decided record,
// and wait waits for that.
func (a *approval) Approve(_ context.Context, req escalate.ApprovalRequest) (escalate.Outcome, error) {
	defer a.done()
	ctx := a.ctx
	if !a.start() || ctx.Err() != nil {
		// Cancelled before the answerer was dispatched: cancelled,
		// without asking (and nothing to record: nothing was asked).
		return escalate.Cancelled, nil
	}
	asked := journal.ApprovalAsked{ApprovalID: req.ApprovalID, SessionID: a.sess.id, TurnID: a.turnID, ToolName: toolName(req),
		CallID: a.callID, Reason: req.Justification}
	if err := a.sess.append(asked); err != nil {
		return escalate.Unavailable, fmt.Errorf("%w: %v", errLog, err)
	}
	a.mu.Lock()
	a.asked = true
	a.mu.Unlock()
	outcome := a.answer(ctx, req)
	if err := a.sess.append(journal.ApprovalDecided{ApprovalID: req.ApprovalID, Outcome: string(outcome)}); err != nil {
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

// answer asks the answerer the question, placed in the server, through
// escalate.Ask: cancellation settles cancelled at once, the answer timeout
// unavailable, and whatever is not an exact known outcome is unavailable.
func (a *approval) answer(ctx context.Context, req escalate.ApprovalRequest) escalate.Outcome {
	if a.answerer == nil {
		return escalate.Unavailable
	}
	if a.hooks != nil && a.hooks.Asking != nil {
		a.hooks.Asking(a.callID)
	}
	timeout := a.timeout
	if timeout <= 0 {
		timeout = DefaultAnswerTimeout
	}
	req.SessionID, req.TurnID, req.ACPSessionID = a.sess.id, a.turnID, a.sess.opened().ACPSessionID
	answerer, by := a.metrics.answeredBy(a.answerer) // metrics: approvals by answerer
	o, _ := escalate.Ask(ctx, answerer, req, timeout)
	a.metrics.approval(o, by())
	return o
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
