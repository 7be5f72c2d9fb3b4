package profiles

import (
	"errors"
	"path/filepath"
)

// NormalizeRequest is the input of NormalizeResponse: a request_permissions
// request and the client's response to it, as JSON
// {"cwd", "requested", "granted", "scope", "strict_auto_review"}.
type NormalizeRequest struct {
	// Cwd is the absolute directory relative paths of both profiles resolve
	// against: the requesting environment's cwd.
	Cwd       string  `json:"cwd"`
	Requested Profile `json:"requested"`
	Granted   Profile `json:"granted"`
	// Scope defaults to turn when absent, the narrower scope.
	Scope            Scope `json:"scope"`
	StrictAutoReview bool  `json:"strict_auto_review"`
}

// NormalizeResult is a normalised grant, as JSON
// {"permissions", "scope", "strict_auto_review"}.
type NormalizeResult struct {
	Permissions      Profile `json:"permissions"`
	Scope            Scope   `json:"scope"`
	StrictAutoReview bool    `json:"strict_auto_review"`
}

// normalizeWire is NormalizeRequest as it arrives: the scope as a string, so
// that a bad scope is reported with its field name (encoding/json does not
// name the field when UnmarshalText fails).
type normalizeWire struct {
	Cwd              string  `json:"cwd"`
	Requested        Profile `json:"requested"`
	Granted          Profile `json:"granted"`
	Scope            *string `json:"scope"`
	StrictAutoReview bool    `json:"strict_auto_review"`
}

// DecodeNormalizeRequest decodes strict JSON: unknown fields are errors that
// name the field, and so is a scope other than "turn" or "session".
func DecodeNormalizeRequest(data []byte) (NormalizeRequest, error) {
	var w normalizeWire
	if err := DecodeStrict(data, &w); err != nil {
		return NormalizeRequest{}, err
	}
	req := NormalizeRequest{Cwd: w.Cwd, Requested: w.Requested, Granted: w.Granted, StrictAutoReview: w.StrictAutoReview}
	if w.Scope != nil {
		s, err := ParseScope(*w.Scope)
		if err != nil {
			return NormalizeRequest{}, &FieldError{Field: "scope", Err: err}
		}
		req.Scope = s
	}
	return req, nil
}

// NormalizeResponse normalises a request_permissions response for runtimes
// not written in Go (`sbx normalize-grant`). Both profiles are normalised
// against req.Cwd (required, absolute), then:
//
//   - strict_auto_review with session scope yields an empty grant with turn
//     scope and strict false (DESIGN.md rule 4);
//   - otherwise the grant is Intersect(requested, granted), scope and strict
//     kept. An empty result is a valid answer, not an error.
//
// Errors are *FieldError naming the field: "cwd", "requested.…", "granted.…".
func NormalizeResponse(req NormalizeRequest) (NormalizeResult, error) {
	if req.Cwd == "" {
		return NormalizeResult{}, &FieldError{Field: "cwd", Err: errors.New("required")}
	}
	if !filepath.IsAbs(req.Cwd) {
		return NormalizeResult{}, &FieldError{Field: "cwd", Err: errors.New("not an absolute path")}
	}
	if _, err := req.Scope.MarshalText(); err != nil {
		return NormalizeResult{}, &FieldError{Field: "scope", Err: err}
	}
	requested, err := req.Requested.Normalize(req.Cwd)
	if err != nil {
		return NormalizeResult{}, prefixField("requested", err)
	}
	granted, err := req.Granted.Normalize(req.Cwd)
	if err != nil {
		return NormalizeResult{}, prefixField("granted", err)
	}
	return normalizeGrant(requested, granted, req.Scope, req.StrictAutoReview), nil
}

// normalizeGrant is the response rule shared by NormalizeResponse and
// GrantStore.Respond. Both profiles must be normalised.
func normalizeGrant(requested, granted Profile, scope Scope, strict bool) NormalizeResult {
	if strict && scope == ScopeSession {
		// A session grant would outlive the review it asks for.
		return NormalizeResult{Scope: ScopeTurn}
	}
	return NormalizeResult{Permissions: Intersect(requested, granted), Scope: scope, StrictAutoReview: strict}
}
