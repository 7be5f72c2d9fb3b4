package escalate

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAsk: the one race of an answer: every asker (Obtain, sbx serve's
// approvals, sbx's signals) settles the same way. Only an exact
// allowed-once in time proceeds; the outcome is normalised and the error
// keeps its own text.
func TestAsk(t *testing.T) {
	answer := func(o Outcome, err error) Approver {
		return ApproverFunc(func(context.Context, ApprovalRequest) (Outcome, error) { return o, err })
	}
	hang := ApproverFunc(func(ctx context.Context, _ ApprovalRequest) (Outcome, error) {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond)
		return AllowedOnce, nil // late: dropped
	})
	var typedNil *CommandApprover
	for _, tt := range []struct {
		name     string
		approver Approver
		cancel   bool
		timeout  time.Duration
		want     Outcome
		wantErr  error
	}{
		{"allowed-once", answer(AllowedOnce, nil), false, 0, AllowedOnce, nil},
		{"rejected", answer(Rejected, nil), false, 0, Rejected, ErrRejected},
		{"cancelled", answer(Cancelled, nil), false, 0, Cancelled, ErrCancelled},
		{"unavailable", answer(Unavailable, nil), false, 0, Unavailable, ErrUnavailable},
		{"unknown word", answer("Allowed-Once", nil), false, 0, Unavailable, ErrUnknownOutcome},
		{"allowed-once with an error", answer(AllowedOnce, errors.New("boom")), false, 0, Unavailable, ErrApproverFailed},
		{"a denial passes through", answer("", ErrMalformedAnswer), false, 0, Unavailable, ErrMalformedAnswer},
		{"panic", typedNil, false, 0, Unavailable, ErrApproverFailed},
		{"no approver", nil, false, 0, Unavailable, ErrNoApprover},
		{"hang, timed out", hang, false, 20 * time.Millisecond, Unavailable, ErrTimeout},
		{"hang, cancelled", hang, true, time.Minute, Cancelled, ErrCancelled},
		{"cancelled before", answer(AllowedOnce, nil), true, 0, Cancelled, ErrCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				if tt.approver == nil || tt.name == "cancelled before" {
					cancel()
				} else {
					time.AfterFunc(20*time.Millisecond, cancel)
				}
			}
			o, err := Ask(ctx, tt.approver, ApprovalRequest{}, tt.timeout)
			if o != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Ask = %q, %v; want %q, %v", o, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDenied) {
				t.Errorf("%v does not match ErrDenied", err)
			}
		})
	}
}

// TestAskAnsweredAfterCancellation: an answer that comes once ctx is
// done is dropped: cancelled, even when it is allowed-once.
func TestAskAnsweredAfterCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	late := ApproverFunc(func(context.Context, ApprovalRequest) (Outcome, error) {
		cancel()
		return AllowedOnce, nil
	})
	if o, err := Ask(ctx, late, ApprovalRequest{}, 0); o != Cancelled || !errors.Is(err, ErrCancelled) {
		t.Errorf("Ask = %q, %v; want cancelled", o, err)
	}
}
