package escalate

import "errors"

// The outcomes a denial of Decide is reported with (DenialOutcome): the
// approval outcomes that deny, plus never for a call the approval policy
// denied without asking anyone.
const (
	OutcomeRejected    = string(Rejected)
	OutcomeCancelled   = string(Cancelled)
	OutcomeUnavailable = string(Unavailable)
	OutcomeNever       = "never"
)

// DenialOutcomes lists them, for the schema's enum.
var DenialOutcomes = []string{OutcomeRejected, OutcomeCancelled, OutcomeUnavailable, OutcomeNever}

// DenialOutcome says which outcome a denial of Decide stands for; ok is
// false for an error that is not such a denial. Everything that is no
// answer at all (no approver, one that failed, timed out or answered
// something malformed) is unavailable: fail closed, as DESIGN.md asks, and
// say so as the approver's absence.
func DenialOutcome(err error) (outcome string, ok bool) {
	if !errors.Is(err, ErrDenied) {
		return "", false
	}
	switch {
	case errors.Is(err, ErrNeverAsks), errors.Is(err, ErrGranularSandbox):
		return OutcomeNever, true
	case errors.Is(err, ErrRejected):
		return OutcomeRejected, true
	case errors.Is(err, ErrCancelled):
		return OutcomeCancelled, true
	}
	// An approval policy with no rule (approval policy X: denied) is
	// never asked about either.
	if errors.Is(err, ErrNoApprover) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTimeout) ||
		errors.Is(err, ErrApproverFailed) || errors.Is(err, ErrMalformedAnswer) || errors.Is(err, ErrUnknownOutcome) {
		return OutcomeUnavailable, true
	}
	return OutcomeNever, true
}
