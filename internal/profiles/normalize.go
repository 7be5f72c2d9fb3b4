package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/internal/enum"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
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
	// Ignored are the fields of granted that sbx does not know, as dotted
	// paths ("granted.macos"); DecodeNormalizeRequest fills it.
	Ignored []string `json:"-"`
}

// NormalizeResult is a normalised grant, as JSON {"permissions", "scope",
// "strict_auto_review", "ignored", "given_paths"}.
type NormalizeResult struct {
	Permissions      Profile `json:"permissions"`
	Scope            Scope   `json:"scope"`
	StrictAutoReview bool    `json:"strict_auto_review"`
	// Ignored lists the response's fields that sbx does not know and did
	// not read ("granted.macos"): they can only have narrowed nothing sbx
	// grants, but the runtime should know they were not honoured.
	Ignored []string `json:"ignored,omitempty"`
	// GivenPaths pairs each path of Permissions with the spelling the
	// granted profile used for it (before cwd and symlinks were resolved),
	// so that a runtime can match the grant against its own paths.
	GivenPaths []GivenPath `json:"given_paths,omitempty"`
}

// GivenPath is one granted path as sbx resolved it and as the caller spelt it.
type GivenPath struct {
	// Access is "read" or "write".
	Access string `json:"access"`
	// Path is the resolved path, as in permissions.
	Path string `json:"path"`
	// Given is the caller's spelling.
	Given string `json:"given"`
}

// normalizeWire is NormalizeRequest as it arrives: the scope as a string, so
// that a bad scope is reported with its field name (encoding/json does not
// name the field when UnmarshalText fails).
type normalizeWire struct {
	Cwd       string  `json:"cwd"`
	Requested Profile `json:"requested"`
	// Granted is decoded leniently, on its own (strictjson.DecodeLenient): the
	// strict decode of the envelope checks only its keys for duplicates.
	Granted          json.RawMessage `json:"granted"`
	Scope            *string         `json:"scope"`
	StrictAutoReview bool            `json:"strict_auto_review"`
}

// normalizeWireCodex is normalizeWire with the granted profile under
// Codex's RequestPermissionsResponse key, permissions.
type normalizeWireCodex struct {
	Cwd              string          `json:"cwd"`
	Requested        Profile         `json:"requested"`
	Granted          json.RawMessage `json:"permissions"`
	Scope            *string         `json:"scope"`
	StrictAutoReview bool            `json:"strict_auto_review"`
}

// GrantKey is the key a request_permissions response carries its granted
// profile under: sbx's "granted" (the zero value) or Codex's
// "permissions" (RequestPermissionsResponse). It is the caller's choice,
// made once per connection or call, never a tolerance: an input under one
// key refuses the other as an unknown field, so that a gateway that filters
// one spelling is not bypassed by the second.
type GrantKey int

const (
	GrantKeyGranted GrantKey = iota
	GrantKeyPermissions
)

var grantKeyNames = enum.Names[GrantKey]{Type: "GrantKey", What: "grant key", Names: []string{"granted", "permissions"}}

func (k GrantKey) String() string { return grantKeyNames.String(k) }

// ParseGrantKey reads "granted" or "permissions".
func ParseGrantKey(s string) (GrantKey, error) { return grantKeyNames.Parse(s) }

func (k GrantKey) MarshalText() ([]byte, error) { return grantKeyNames.Marshal(k) }

func (k *GrantKey) UnmarshalText(b []byte) error { return grantKeyNames.Unmarshal(k, b) }

// DecodeNormalizeRequest decodes the input of `sbx normalize-grant`. The
// envelope and requested are strict: unknown fields are errors that name the
// field, and so is a scope other than "turn" or "session". granted is the
// client's answer and is lenient (strictjson.DecodeLenient): a field sbx does not know
// is skipped and listed in Ignored, as Codex ignores one; duplicate keys and
// case variants of known fields are still refused.
func DecodeNormalizeRequest(data []byte) (NormalizeRequest, error) {
	return DecodeNormalizeRequestAs(data, GrantKeyGranted)
}

// DecodeNormalizeRequestAs is DecodeNormalizeRequest with the granted
// profile under key (the other key is an unknown field); field names in
// errors and Ignored use key.
func DecodeNormalizeRequestAs(data []byte, key GrantKey) (NormalizeRequest, error) {
	var w normalizeWire
	switch key {
	case GrantKeyGranted:
		if err := strictjson.Decode(data, &w); err != nil {
			return NormalizeRequest{}, err
		}
	case GrantKeyPermissions:
		var c normalizeWireCodex
		if err := strictjson.Decode(data, &c); err != nil {
			return NormalizeRequest{}, err
		}
		w = normalizeWire(c)
	default:
		return NormalizeRequest{}, fmt.Errorf("invalid grant key %d", int(key))
	}
	name := key.String()
	req := NormalizeRequest{Cwd: w.Cwd, Requested: w.Requested, StrictAutoReview: w.StrictAutoReview}
	if raw := bytes.TrimSpace(w.Granted); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		ignored, err := strictjson.DecodeLenient(raw, &req.Granted)
		if err != nil {
			return NormalizeRequest{}, prefixField(name, err)
		}
		for _, f := range ignored {
			req.Ignored = append(req.Ignored, name+"."+f)
		}
	}
	if w.Scope != nil {
		s, err := ParseScope(*w.Scope)
		if err != nil {
			return NormalizeRequest{}, &strictjson.FieldError{Field: "scope", Err: err}
		}
		req.Scope = s
	}
	return req, nil
}

// NormalizeResponse normalises a request_permissions response for runtimes
// not written in Go (`sbx normalize-grant`). Both profiles are normalised
// against req.Cwd (required, absolute), then:
//
//   - an empty requested profile is refused, as GrantStore.Request refuses
//     one: a request for nothing has nothing to answer;
//   - strict_auto_review with session scope yields an empty grant with turn
//     scope and strict false (DESIGN.md rule 4);
//   - otherwise the grant is Intersect(requested, granted), scope and strict
//     kept. An empty result is a valid answer, not an error.
//
// Errors are *strictjson.FieldError naming the field: "cwd", "requested.…", "granted.…".
func NormalizeResponse(req NormalizeRequest) (NormalizeResult, error) {
	if req.Cwd == "" {
		return NormalizeResult{}, &strictjson.FieldError{Field: "cwd", Err: errors.New("required")}
	}
	if !filepath.IsAbs(req.Cwd) {
		return NormalizeResult{}, &strictjson.FieldError{Field: "cwd", Err: errors.New("not an absolute path")}
	}
	if _, err := req.Scope.MarshalText(); err != nil {
		return NormalizeResult{}, &strictjson.FieldError{Field: "scope", Err: err}
	}
	requested, err := req.Requested.Normalize(req.Cwd)
	if err != nil {
		return NormalizeResult{}, prefixField("requested", err)
	}
	if requested.IsEmpty() {
		return NormalizeResult{}, &strictjson.FieldError{Field: "requested", Err: errors.New("requests nothing")}
	}
	// The granted entries are resolved one by one and not folded: each is
	// kept or dropped whole by Intersect, and one wider entry must not
	// swallow a narrower one that is within the request.
	gRead, err := resolveAll(req.Granted.ReadPaths(), req.Cwd, "file_system.read")
	if err != nil {
		return NormalizeResult{}, prefixField("granted", err)
	}
	gWrite, err := resolveAll(req.Granted.WritePaths(), req.Cwd, "file_system.write")
	if err != nil {
		return NormalizeResult{}, prefixField("granted", err)
	}
	// Granted domains are checked and canonicalised but, like paths, not
	// folded: a wider "*.x.org" must not swallow a granted "a.x.org".
	gNet, err := canonicalNetwork(req.Granted.Network)
	if err != nil {
		return NormalizeResult{}, prefixField("granted", err)
	}
	granted := Profile{Network: gNet, FileSystem: &FileSystem{Read: gRead, Write: gWrite}}
	res := normalizeGrant(requested, granted, req.Scope, req.StrictAutoReview)
	res.Ignored = req.Ignored
	res.GivenPaths = append(givenPaths("read", res.Permissions.ReadPaths(), gRead, req.Granted.ReadPaths()),
		givenPaths("write", res.Permissions.WritePaths(), gWrite, req.Granted.WritePaths())...)
	return res, nil
}

// givenPaths pairs each kept path with the granted spellings that resolved
// to it.
func givenPaths(access string, kept, resolved, given []string) []GivenPath {
	var out []GivenPath
	for i, r := range resolved {
		if slices.Contains(kept, r) && !slices.Contains(out, GivenPath{access, r, given[i]}) {
			out = append(out, GivenPath{Access: access, Path: r, Given: given[i]})
		}
	}
	return out
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

// canonicalNetwork validates n and spells each pattern canonically, one for
// one, without folding.
func canonicalNetwork(n *Network) (*Network, error) {
	if n == nil {
		return nil, nil
	}
	allowed, denied, err := validateNetwork(n)
	if err != nil {
		return nil, err
	}
	out := *n
	out.AllowedDomains, out.DeniedDomains = netrule.Strings(allowed), netrule.Strings(denied)
	return &out, nil
}
