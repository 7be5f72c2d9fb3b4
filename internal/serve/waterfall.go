package serve

import (
	"context"
	"os"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
)

// DefaultAnswerTimeout bounds one approval's ask when Options.AnswerTimeout
// is zero (sbx serve --answer-timeout). A person may be behind the answerer,
// so it is generous, but never unbounded: a hung answerer ends in a denial.
const DefaultAnswerTimeout = 10 * time.Minute

// Claimer is one answerer of a Waterfall: it says whether it takes a
// question before it is asked. Claim must not block and must not ask
// anybody; it reads the answerer's own state (a client able to answer is
// connected, a terminal can be opened).
type Claimer interface {
	Answerer
	Claim(q Question) bool
}

// Waterfall is the server's answerers in order (sbx serve --answerers):
// the first that claims a question answers it, and the others are not
// asked. When none claims, the outcome is unavailable: denied. A later
// answerer (a browser panel, an ACP bridge) is one more entry.
//
// The waterfall is asked only for what needs asking: a session whose
// policy is never is denied by escalate.Decide before any answerer is
// called. The answer is bounded by the server's answer timeout and read
// as every Answerer's is: only allowed-once proceeds.
type Waterfall []Claimer

// Approve asks the first answerer that claims q.
func (w Waterfall) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	if c := w.claimer(q); c != nil {
		return c.Approve(ctx, q)
	}
	return escalate.Unavailable, nil
}

// claimer is the first answerer that claims q; nil when none does.
func (w Waterfall) claimer(q Question) Claimer {
	for _, c := range w {
		if c.Claim(q) {
			return c
		}
	}
	return nil
}

// Always makes an Answerer a Claimer that claims every question: the
// --approver program, which is always there to be asked.
type Always struct{ Answerer }

func (Always) Claim(Question) bool { return true }

// TerminalAnswerer asks on the controlling terminal (the prompt of sbx run,
// escalate.TerminalApprover). It claims a question only when the terminal
// can be opened, so that without one the waterfall passes on.
type TerminalAnswerer struct{ Approver escalate.TerminalApprover }

func (t TerminalAnswerer) Claim(Question) bool {
	if t.Approver.TTY != nil {
		return true
	}
	path := t.Approver.Path
	if path == "" {
		path = escalate.DefaultTTY
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func (t TerminalAnswerer) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	return t.Approver.Approve(ctx, q)
}
