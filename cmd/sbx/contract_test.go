package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestErrorKindsMatchSchema: the kind vocabulary is defined once in Go and
// once in the schema, and the two agree; so do the outcomes and the fields.
func TestErrorKindsMatchSchema(t *testing.T) {
	res := loadSchemaDoc(t, resultSchema)
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"error kind enum", res.enum(t, "$defs/error/properties/kind"), errorKinds},
		{"error outcome enum", res.enum(t, "$defs/error/properties/outcome"), escalate.DenialOutcomes},
		{"errorObject fields", res.propertyNames(t, "$defs/error"), jsonNames(reflect.TypeFor[errorObject]())},
		{"refusal fields", res.propertyNames(t, "$defs/refusal"), jsonNames(reflect.TypeFor[refusal]())},
		{"outputEvent fields", res.propertyNames(t, "$defs/output_event"), jsonNames(reflect.TypeFor[outputEvent]())},
	} {
		if !slices.Equal(tt.got, tt.want) && !slices.Equal(sorted(tt.got), sorted(tt.want)) {
			t.Errorf("%s: schema has %v, Go has %v", tt.name, tt.got, tt.want)
		}
	}
	rep := loadSchemaDoc(t, reportSchema)
	if got := rep.at(t, "$defs/report/properties/schema_version")["const"]; got != SchemaVersion {
		t.Errorf("report schema_version const %v, Go has %q", got, SchemaVersion)
	}
}

func TestErrorFor(t *testing.T) {
	for _, tt := range []struct {
		name     string
		err      error
		fallback string
		want     errorObject
	}{
		{"field", &strictjson.FieldError{Field: "cwd", Err: errors.New("required")}, errInvalidRequest,
			errorObject{Kind: errInvalidRequest, Message: "cwd: required", Field: "cwd"}},
		{"plain bad input", errors.New("malformed JSON"), errInvalidRequest,
			errorObject{Kind: errInvalidRequest, Message: "malformed JSON"}},
		{"never", fmt.Errorf("approval denied: %w", escalate.ErrNeverAsks), errInvalidRequest,
			errorObject{Kind: errDeniedByPolicy, Message: "approval denied: " + escalate.ErrNeverAsks.Error(), Outcome: "never"}},
		{"rejected", fmt.Errorf("approval denied: %w", escalate.ErrRejected), errInvalidRequest,
			errorObject{Kind: errDeniedByPolicy, Message: "approval denied: " + escalate.ErrRejected.Error(), Outcome: "rejected"}},
		{"unsupported, even wrapped as internal", internalError{&report.UnsupportedFeatureError{Feature: "netns", Reason: "no"}}, errInternal,
			errorObject{Kind: errUnsupported, Message: "required feature netns is not available: no", Feature: "netns"}},
		{"not found", fmt.Errorf("%w: nope", call.ErrNotFound), errExecFailed,
			errorObject{Kind: errExecFailed, Message: "command not found: nope", Errno: "ENOENT"}},
		{"internal", internalError{errors.New("pipe: EMFILE")}, errInvalidRequest,
			errorObject{Kind: errInternal, Message: "pipe: EMFILE"}},
		{"internal wins over a field inside", internalError{&strictjson.FieldError{Field: "x", Err: errors.New("y")}}, errInvalidRequest,
			errorObject{Kind: errInternal, Message: "x: y"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := *errorFor(tt.err, tt.fallback); got != tt.want {
				t.Errorf("errorFor = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := execErrno(fmt.Errorf("start: x: %w", syscall.EACCES)); got != "EACCES" {
		t.Errorf("execErrno(EACCES) = %q", got)
	}
}

// TestExecRefusalKinds: each kind of refusal of sbx exec says its kind and
// its detail, with the message of the stderr line unchanged.
func TestExecRefusalKinds(t *testing.T) {
	result := compileSchema(t, resultSchema)
	cwd := t.TempDir()
	for _, tt := range []struct {
		name, req string
		want      errorObject // Message is checked against stderr
	}{
		{"bad field", `{"command":["/bin/true"],"cwd":"` + cwd + `","kill_grace_ms":-5}`, errorObject{Kind: errInvalidRequest, Field: "kill_grace_ms"}},
		{"kill grace too long", `{"command":["/bin/true"],"cwd":"` + cwd + `","kill_grace_ms":3600001}`, errorObject{Kind: errInvalidRequest, Field: "kill_grace_ms"}},
		{"malformed", `{"command":`, errorObject{Kind: errInvalidRequest}},
		{"approval never", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"with_additional_permissions","justification":"j","additional_permissions":{"network":{"enabled":true}}}`,
			errorObject{Kind: errDeniedByPolicy, Outcome: "never"}},
		{"approver rejects", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"with_additional_permissions","justification":"j","additional_permissions":{"network":{"enabled":true}},"approval_policy":"on-request","approver":["/bin/sh","-c","echo '{\"outcome\":\"rejected\"}'"]}`,
			errorObject{Kind: errDeniedByPolicy, Outcome: "rejected"}},
		{"approver fails", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"with_additional_permissions","justification":"j","additional_permissions":{"network":{"enabled":true}},"approval_policy":"on-request","approver":["/bin/false"]}`,
			errorObject{Kind: errDeniedByPolicy, Outcome: "unavailable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := execMain(t, tt.req)
			if code != ExitRefused {
				t.Fatalf("sbx exec = %d, want %d; stdout %s", code, ExitRefused, out)
			}
			if err := validateJSON(result, out); err != nil {
				t.Errorf("refusal does not satisfy the schema: %v\n%s", err, out)
			}
			var got refusal
			if err := json.Unmarshal(out, &got); err != nil || got.ErrorDetail == nil {
				t.Fatalf("refusal %s: %v", out, err)
			}
			d := *got.ErrorDetail
			if d.Message != got.Error || stderr != "sbx exec: "+got.Error+"\n" {
				t.Errorf("message %q, error %q, stderr %q: want one message", d.Message, got.Error, stderr)
			}
			d.Message = ""
			if d != tt.want {
				t.Errorf("error_detail %+v, want %+v", d, tt.want)
			}
		})
	}
}

// TestExecCallID: call_id comes back on the result, on every stream event
// and on an fs result; schema_version is on each result.
func TestExecCallID(t *testing.T) {
	tmp := t.TempDir()
	code, out, stderr := execMain(t, mustJSON(map[string]any{"command": []string{"/bin/echo", "hi"}, "cwd": tmp, "call_id": "call-7"}))
	var res map[string]any
	if err := json.Unmarshal(out, &res); code != 0 || err != nil {
		t.Fatalf("sbx exec = %d (%v); stderr %s", code, err, stderr)
	}
	if res["call_id"] != "call-7" || res["schema_version"] != SchemaVersion {
		t.Errorf("call_id %v schema_version %v, want call-7, %s", res["call_id"], res["schema_version"], SchemaVersion)
	}
	code, out, stderr = execMain(t, mustJSON(map[string]any{"command": []string{"/bin/sh", "-c", "echo a; echo b >&2"}, "cwd": tmp, "call_id": "call-8", "stream": true}))
	if code != 0 {
		t.Fatalf("sbx exec = %d; stderr %s", code, stderr)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("want two events and a result, got %s", out)
	}
	for _, l := range lines {
		var ev map[string]any
		json.Unmarshal(l, &ev)
		if ev["call_id"] != "call-8" {
			t.Errorf("line without call_id call-8: %s", l)
		}
	}
	code, out, _ = execMain(t, mustJSON(map[string]any{"command": []string{"/nonexistent/x"}, "cwd": tmp, "call_id": "call-9"}))
	json.Unmarshal(out, &res)
	d, _ := res["error_detail"].(map[string]any)
	if code != 0 || res["call_id"] != "call-9" || d["kind"] != errExecFailed || d["errno"] != "ENOENT" {
		t.Errorf("127: call_id %v error_detail %v, want call-9, exec_failed ENOENT", res["call_id"], d)
	}
}

// TestRunKillGraceFlag: --kill-grace takes a positive duration up to an
// hour; anything else is refused naming the flag.
func TestRunKillGraceFlag(t *testing.T) {
	for _, v := range []string{"0", "-1s", "2h"} {
		var out, errb bytes.Buffer
		code := Main([]string{"run", "--kill-grace", v, "--", "/bin/true"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitRefused || !strings.Contains(errb.String(), "--kill-grace") {
			t.Errorf("--kill-grace %s: exit %d stderr %q, want 125 naming --kill-grace", v, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"run", "--kill-grace", "150ms", "--", "/bin/true"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Errorf("--kill-grace 150ms: exit %d stderr %q", code, errb.String())
	}
}
