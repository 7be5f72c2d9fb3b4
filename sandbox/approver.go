package sandbox

import (
	"context"

	"github.com/sbx-sandbox/sbx/internal/escalate"
)

// Question is the one approval question every answerer gets (the shape an
// approver program reads on its stdin, and an sbx server's clients in
// approval/requested): TargetMode, AdditionalPermissions, NewPermissions,
// MergedPermissions, CapAdd, Justification, Command and the ids.
type Question = escalate.ApprovalRequest

// Outcome is an approver's answer.
type Outcome = escalate.Outcome

// The outcomes. Only AllowedOnce proceeds; each other has its own error.
const (
	AllowedOnce = escalate.AllowedOnce
	Rejected    = escalate.Rejected
	Cancelled   = escalate.Cancelled
	Unavailable = escalate.Unavailable
)

// Approver answers approval questions in-process (Options.Approver). Only
// an exact AllowedOnce lets the call proceed; any other outcome, an error,
// a panic, or an answer after ctx ends denies it. Approve should honour
// ctx, but nothing relies on it: the call stops waiting once ctx ends.
type Approver interface {
	Approve(ctx context.Context, q Question) (Outcome, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, q Question) (Outcome, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, q Question) (Outcome, error) { return f(ctx, q) }

// answerer adapts a to the one answerer model (escalate.Approver): the
// question and the outcome are the same values, so the fail-closed rules
// of escalate.Ask apply unchanged.
func answerer(a Approver) escalate.Approver {
	return escalate.ApproverFunc(func(ctx context.Context, q escalate.ApprovalRequest) (escalate.Outcome, error) {
		return a.Approve(ctx, q)
	})
}
