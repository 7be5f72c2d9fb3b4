package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// Every field a tool takes from the request table is a row of it, typed
// as the row says; a key that is not a row is refused.
func TestSchemaFromFields(t *testing.T) {
	s, err := schemaOf(shellKeys)
	if err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	if got := props["command"].(map[string]any)["type"]; got != "array" {
		t.Errorf("command: type %v, want array", got)
	}
	if got := props["timeout_ms"].(map[string]any)["type"]; got != "integer" {
		t.Errorf("timeout_ms: type %v, want integer", got)
	}
	fsw := props["additional_permissions"].(map[string]any)["properties"].(map[string]any)["file_system"].(map[string]any)["properties"].(map[string]any)["write"].(map[string]any)
	if fsw["type"] != "array" {
		t.Errorf("additional_permissions.file_system.write: %v", fsw)
	}
	priv := props["additional_permissions"].(map[string]any)["properties"].(map[string]any)["network"].(map[string]any)["properties"].(map[string]any)["allow_private_addresses"].(map[string]any)
	if priv["type"] != "boolean" {
		t.Errorf("allow_private_addresses: %v", priv)
	}
	for _, owned := range []string{"sandbox_mode", "approval_policy", "grants", "guard", "approver"} {
		if props[owned] != nil {
			t.Errorf("the shell tool takes %s, which the session owns", owned)
		}
	}
	if _, err := schemaOf([]string{"command", "no_such_field"}); err == nil || !strings.Contains(err.Error(), "no_such_field") {
		t.Errorf("a key outside call.Fields: err %v", err)
	}
}

// The fs tools' own arguments are fields of the fs object of an sbx exec
// request, and go there; the escalation fields stay on top.
func TestFSTools(t *testing.T) {
	tags := map[string]bool{}
	rt := reflect.TypeOf(wire.FSRequest{})
	for i := 0; i < rt.NumField(); i++ {
		tags[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	for _, op := range fsop.Kinds {
		if _, ok := fsArgs[op]; !ok {
			t.Errorf("%s: no tool", op)
		}
		for _, a := range fsArgs[op] {
			if !tags[a] {
				t.Errorf("%s: argument %s is not a field of wire.FSRequest", op, a)
			}
		}
		if _, err := fsSchema(op); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
	if toolName(fsop.ApplyPatch) != "apply_patch" || toolName(fsop.Write) != "fs_write" {
		t.Errorf("tool names: %s %s", toolName(fsop.ApplyPatch), toolName(fsop.Write))
	}
	req := fsRequest(fsop.Move, map[string]any{"path": "a", "dest": "b", "justification": "j", "sandbox_permissions": "with_additional_permissions"})
	want := map[string]any{"fs": map[string]any{"op": "move", "path": "a", "dest": "b"}, "justification": "j", "sandbox_permissions": "with_additional_permissions"}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("fsRequest = %v, want %v", req, want)
	}
}

// A denial is the sandbox's (denials, a retry); a non-zero exit alone is
// the command's own failure and is not marked denied.
func TestStructured(t *testing.T) {
	out, denied, err := structured(json.RawMessage(`{"exit_code": 3, "stdout": "hi\n", "denials": [], "permissions": {}, "env": {}}`))
	if err != nil || denied || out["denied"] != false || out["exit_code"] != float64(3) || out["permissions"] != nil {
		t.Errorf("exit 3: %v %v %v", out, denied, err)
	}
	r := toolResult(out, denied)
	if r.IsError {
		t.Errorf("exit 3 is an error result")
	}
	out, denied, err = structured(json.RawMessage(`{"exit_code": 1, "denials": [{"operation": "create", "path": "/etc/x"}],
		"retry": {"sandbox_permissions": "with_additional_permissions", "additional_permissions": {"file_system": {"write": ["/etc"]}}, "request": {"session_id": "s"}}}`))
	if err != nil || !denied || out["denied"] != true {
		t.Fatalf("denied: %v %v %v", out, denied, err)
	}
	retryArguments(out, map[string]any{"command": []any{"touch", "/etc/x"}, "justification": "why"})
	retry := out["retry"].(map[string]any)
	if retry["request"] != nil {
		t.Errorf("retry keeps the sbx exec request: %v", retry)
	}
	args := retry["arguments"].(map[string]any)
	if args["sandbox_permissions"] != "with_additional_permissions" || args["justification"] != "why" || args["additional_permissions"] == nil || args["command"] == nil {
		t.Errorf("retry arguments: %v", args)
	}
	if !toolResult(out, denied).IsError {
		t.Errorf("a denial is not an error result")
	}
}

// MCP roots narrow the server's roots, never widen them.
func TestNarrow(t *testing.T) {
	got := narrow([]string{"/srv/a", "/srv/b"}, []string{"/srv/a/x", "/srv", "/etc"})
	want := []string{"/srv/a/x", "/srv/a", "/srv/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("narrow = %v, want %v", got, want)
	}
	if got := narrow([]string{"/srv/a"}, []string{"/srv/ab", "/"}); !reflect.DeepEqual(got, []string{"/srv/a"}) {
		t.Errorf("a sibling with a common prefix widened: %v", got)
	}
	if !inside("/srv/a/x", []string{"/srv/a"}) || inside("/srv/ab", []string{"/srv/a"}) || inside("/srv", []string{"/srv/a"}) {
		t.Errorf("inside")
	}
	for uri, want := range map[string]string{"file:///srv/a": "/srv/a", "file://localhost/srv/a/../b": "/srv/b", "file://host/srv": "", "http://x/srv": "", "file:rel": ""} {
		if p, ok := rootPath(uri); p != want || ok != (want != "") {
			t.Errorf("rootPath(%q) = %q %v", uri, p, ok)
		}
	}
}
