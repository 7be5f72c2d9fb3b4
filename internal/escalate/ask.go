package escalate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

type answer struct {
	outcome Outcome
	err     error
}

// Ask is the one race of an answer against cancellation, for every asker
// (Obtain, an sbx server's approvals, sbx's own signal handling): it asks
// approver once and settles at once when ctx is done, or when timeout
// (> 0) passes first; a later answer is dropped (the goroutine finishes into
// a buffered channel). A panicking approver (say, a typed nil) is a failed
// one. The outcome is normalised: AllowedOnce only for an exact
// allowed-once in time; Cancelled when ctx ended first; Rejected or
// Unavailable as answered; Unavailable for an error, a timeout or an
// unknown word. The error is nil only for AllowedOnce, else a denial with
// its own text (ErrCancelled, ErrTimeout, ErrRejected, ErrApproverFailed...).
func Ask(ctx context.Context, approver Approver, req ApprovalRequest, timeout time.Duration) (Outcome, error) {
	if approver == nil {
		return Unavailable, ErrNoApprover
	}
	if ctx.Err() != nil {
		return Cancelled, contextDenial(ctx)
	}
	askCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		askCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- answer{err: fmt.Errorf("panic: %v", r)}
			}
		}()
		o, err := approver.Approve(askCtx, req)
		ch <- answer{o, err}
	}()
	var a answer
	select {
	case <-askCtx.Done():
	case a = <-ch:
	}
	switch {
	case ctx.Err() != nil:
		// Cancelled, or answered after cancellation.
		return Cancelled, contextDenial(ctx)
	case askCtx.Err() != nil:
		// The answerer hung, or answered after the timeout.
		return Unavailable, ErrTimeout
	}
	err := outcomeError(a)
	switch {
	case err == nil:
		return AllowedOnce, nil
	case a.err == nil && (a.outcome == Rejected || a.outcome == Cancelled):
		return a.outcome, err
	}
	return Unavailable, err
}

func outcomeError(a answer) error {
	switch {
	case a.err != nil && errors.Is(a.err, ErrDenied):
		return a.err
	case errors.Is(a.err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", ErrTimeout, a.err)
	case a.err != nil:
		return fmt.Errorf("%w: %v", ErrApproverFailed, a.err)
	}
	switch a.outcome {
	case AllowedOnce:
		return nil
	case Rejected:
		return ErrRejected
	case Cancelled:
		return ErrCancelled
	case Unavailable:
		return ErrUnavailable
	}
	return fmt.Errorf("%w: %q", ErrUnknownOutcome, string(a.outcome))
}

func contextDenial(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrCancelled
}
