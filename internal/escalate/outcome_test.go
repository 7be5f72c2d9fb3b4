package escalate

import (
	"errors"
	"fmt"
	"testing"
)

func TestDenialOutcome(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
		ok   bool
	}{
		{fmt.Errorf("approval denied: %w", ErrNeverAsks), OutcomeNever, true},
		{fmt.Errorf("approval denied: %w", ErrRejected), OutcomeRejected, true},
		{fmt.Errorf("approval denied: %w", ErrCancelled), OutcomeCancelled, true},
		{fmt.Errorf("approval denied: %w", ErrUnavailable), OutcomeUnavailable, true},
		{fmt.Errorf("approval denied: %w", ErrNoApprover), OutcomeUnavailable, true},
		{fmt.Errorf("approval denied: %w: x", ErrTimeout), OutcomeUnavailable, true},
		{fmt.Errorf("approval denied: %w: exit 1", ErrApproverFailed), OutcomeUnavailable, true},
		{fmt.Errorf("approval denied: %w", ErrMalformedAnswer), OutcomeUnavailable, true},
		{fmt.Errorf("approval policy x: %w", ErrDenied), OutcomeNever, true},
		{errors.New("cwd: missing"), "", false},
	} {
		got, ok := DenialOutcome(tt.err)
		if got != tt.want || ok != tt.ok {
			t.Errorf("DenialOutcome(%v) = %q, %t; want %q, %t", tt.err, got, ok, tt.want, tt.ok)
		}
	}
}
