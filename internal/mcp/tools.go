package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/fsop"
)

// shellKeys are the request fields the shell tool takes, each a row of
// the request table (call.Fields): its input schema is derived from them,
// so a field is spelled, typed and checked once. What the session owns
// (sandbox_mode, approval_policy, grants, guard, approver) is not among
// them: the server's flags set it, never a tool's arguments.
var shellKeys = []string{
	"command", "shell.kind", "shell.script", "shell.login", "cwd", "timeout_ms",
	"sandbox_permissions", "escalate_to", "justification",
	"additional_permissions.file_system.read", "additional_permissions.file_system.write",
	"additional_permissions.network.allowed_domains", "additional_permissions.network.denied_domains",
	"additional_permissions.network.allow_private_addresses",
}

// escalationKeys are the fields of every tool that asks for more than
// the session has: the fs tools take them as the shell tool does.
var escalationKeys = []string{
	"cwd", "sandbox_permissions", "escalate_to", "justification",
	"additional_permissions.file_system.read", "additional_permissions.file_system.write",
}

// fsArgs are the arguments of each fs operation (the "fs" object of an
// sbx exec request, wire.FSRequest), beside escalationKeys.
var fsArgs = map[fsop.Kind][]string{
	fsop.Write: {"path", "content"}, fsop.Append: {"path", "content"},
	fsop.Mkdir: {"path", "parents"}, fsop.Remove: {"path", "recursive"},
	fsop.Move: {"path", "dest"}, fsop.Copy: {"path", "dest", "recursive"},
	fsop.Chmod: {"path", "mode"}, fsop.ApplyPatch: {"patch"},
}

var fsArgDoc = map[string]string{
	"path":      "the file or directory (relative: to cwd)",
	"dest":      "the destination path",
	"content":   "the file's new content (text)",
	"patch":     "a unified diff; the paths in it are relative to cwd",
	"parents":   "make missing parent directories",
	"recursive": "a directory and everything under it",
	"mode":      "an octal mode, as 0644",
}

var fieldDoc = map[string]string{
	"command":             "the argv to run (command[0] looked up on PATH); give command or shell.script",
	"shell.kind":          "the shell that runs shell.script: sh (default), bash, zsh, ...",
	"shell.script":        "a script for the shell; give command or shell.script",
	"cwd":                 "the working directory (default: the server's)",
	"timeout_ms":          "kill the command after this many milliseconds",
	"sandbox_permissions": "use_default (the session's sandbox), with_additional_permissions (ask for additional_permissions) or require_escalated (ask to run unsandboxed)",
	"escalate_to":         "the mode a require_escalated call asks to run in: workspace-write or danger-full-access",
	"justification":       "why the call needs what it asks for: shown to the person approving",
}

// fieldByKey finds a request-table row.
func fieldByKey(key string) (call.Field, bool) {
	for _, f := range call.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return call.Field{}, false
}

// fieldSchema is the JSON schema of one table row: a list is an array of
// strings, a switch a boolean, a duration or count an integer.
func fieldSchema(f call.Field) map[string]any {
	var s map[string]any
	switch {
	case f.List:
		s = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	case f.Switch:
		s = map[string]any{"type": "boolean"}
	case strings.HasSuffix(f.Key, "_ms"):
		s = map[string]any{"type": "integer", "minimum": 0}
	default:
		s = map[string]any{"type": "string"}
	}
	if f.Key == "sandbox_permissions" {
		s["enum"] = []string{"use_default", "with_additional_permissions", "require_escalated"}
	}
	if d := fieldDoc[f.Key]; d != "" {
		s["description"] = d
	}
	return s
}

// schemaOf is an object schema with the given table rows, nested by their
// dotted keys. A key that is not a row is a programming error.
func schemaOf(keys []string) (map[string]any, error) {
	root := object()
	for _, k := range keys {
		f, ok := fieldByKey(k)
		if !ok {
			return nil, fmt.Errorf("%s: not a row of call.Fields", k)
		}
		parts := strings.Split(k, ".")
		o := root
		for _, p := range parts[:len(parts)-1] {
			props := o["properties"].(map[string]any)
			next, ok := props[p].(map[string]any)
			if !ok {
				next = object()
				props[p] = next
			}
			o = next
		}
		o["properties"].(map[string]any)[parts[len(parts)-1]] = fieldSchema(f)
	}
	return root, nil
}

func object() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
}

// fsSchema is the input schema of the fs tool of op.
func fsSchema(op fsop.Kind) (map[string]any, error) {
	s, err := schemaOf(escalationKeys)
	if err != nil {
		return nil, err
	}
	props := s["properties"].(map[string]any)
	var required []string
	for _, a := range fsArgs[op] {
		t := "string"
		if a == "parents" || a == "recursive" {
			t = "boolean"
		} else {
			required = append(required, a)
		}
		props[a] = map[string]any{"type": t, "description": fsArgDoc[a]}
	}
	s["required"] = required
	return s, nil
}

// toolName is the MCP tool of an fs operation: apply_patch, fs_write, ...
func toolName(op fsop.Kind) string {
	if op == fsop.ApplyPatch {
		return "apply_patch"
	}
	return "fs_" + string(op)
}

// fsRequest is the sbx exec request of an fs tool's arguments: its own
// arguments go under "fs" with the op, the escalation fields stay on top.
func fsRequest(op fsop.Kind, args map[string]any) map[string]any {
	req := map[string]any{}
	fs := map[string]any{"op": string(op)}
	for k, v := range args {
		if isArg(op, k) {
			fs[k] = v
		} else {
			req[k] = v
		}
	}
	req["fs"] = fs
	return req
}

func isArg(op fsop.Kind, k string) bool {
	for _, a := range fsArgs[op] {
		if a == k {
			return true
		}
	}
	return false
}

// outputKeys are the result fields a tool's structuredContent keeps: what
// the model acts on (the exit code, the output, the denials and the retry
// that would get past them), not the whole report.
var outputKeys = []string{"call_id", "exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated",
	"timed_out", "killed_by", "aborted", "op", "ok", "error", "denials", "denials_dropped", "retry"}

// structured is a tool's structuredContent from an exec result, and
// whether the sandbox denied something. A denial is the sandbox refusing
// an operation (the report's denials, or a retry hint); an exit status
// other than 0 alone is the command's own failure, not a denial.
func structured(result json.RawMessage) (map[string]any, bool, error) {
	var all map[string]any
	if err := json.Unmarshal(result, &all); err != nil {
		return nil, false, fmt.Errorf("exec result: %w", err)
	}
	out := map[string]any{}
	for _, k := range outputKeys {
		if v, ok := all[k]; ok && v != nil {
			out[k] = v
		}
	}
	denials, _ := all["denials"].([]any)
	denied := len(denials) > 0 || all["retry"] != nil
	out["denied"] = denied
	return out, denied, nil
}

// retryArguments makes a result's retry hint the model's: its request
// (the sbx exec params, with the session's ids) becomes arguments, the
// same tool's arguments again with the escalation of the hint, which the
// model calls the tool with to ask for what was denied.
func retryArguments(out map[string]any, args map[string]any) {
	retry, ok := out["retry"].(map[string]any)
	if !ok {
		return
	}
	again := clone(args)
	for _, k := range []string{"sandbox_permissions", "escalate_to", "additional_permissions", "justification"} {
		if v, ok := retry[k]; ok && v != "" {
			again[k] = v
		}
	}
	if j, _ := args["justification"].(string); j != "" {
		again["justification"] = j // the model's own reason, not the hint's empty one
	}
	delete(retry, "request")
	retry["arguments"] = again
}

// clone copies a JSON object deeply enough that changing its top-level
// keys leaves the original alone.
func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
