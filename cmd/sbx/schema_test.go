package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// The JSON Schemas in docs/schema pin the wire contract of `sbx exec` and
// `sbx run --report`. These tests hold three things together: the schemas,
// the examples in docs (docs/schema/examples and the blocks of docs/json.md),
// and what sbx actually prints.

var (
	schemaDir   = filepath.Join("..", "..", "docs", "schema")
	examplesDir = filepath.Join(schemaDir, "examples")
	jsonDoc     = filepath.Join("..", "..", "docs", "json.md")
)

const (
	requestSchema = "exec-request.schema.json"
	resultSchema  = "exec-result.schema.json"
	reportSchema  = "report.schema.json"
)

// schemaBase is the prefix of every schema's $id: a consumer loads the
// schemas by id, and their $refs resolve between them without a registry
// built by hand.
const schemaBase = "https://sbx.dev/schema/v1/"

// compileSchema compiles the schema name by its $id, with every schema of
// docs/schema known by its own $id only (no file URL), so a $ref that does
// not resolve by id fails here.
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s (%v)", schemaDir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if want := schemaBase + filepath.Base(f); id != want {
			t.Fatalf("%s: $id %q, want %q", filepath.Base(f), id, want)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
	}
	sch, err := c.Compile(schemaBase + name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return sch
}

// TestSchemaIDs loads every schema by its $id alone: each compiles, and
// every $ref in it points into a schema of the set.
func TestSchemaIDs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	for _, f := range files {
		name := filepath.Base(f)
		compileSchema(t, name)
		data, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile(`"\$ref": "([^"#]*)#`).FindAllSubmatch(data, -1) {
			if ref := string(m[1]); ref != "" {
				if _, err := os.Stat(filepath.Join(schemaDir, ref)); err != nil {
					t.Errorf("%s: $ref to %s, which is not in %s", name, ref, schemaDir)
				}
			}
		}
	}
}

func validateJSON(sch *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// schemaFor maps an example file to the schema it must satisfy.
func schemaFor(file string) string {
	switch {
	case strings.HasPrefix(file, "exec-request"):
		return requestSchema
	case strings.HasPrefix(file, "exec-result"), strings.HasPrefix(file, "exec-refusal"):
		return resultSchema
	case strings.HasPrefix(file, "report"):
		return reportSchema
	}
	return ""
}

func TestSchemaExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s (%v)", examplesDir, err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s := schemaFor(name)
			if s == "" {
				t.Fatalf("%s: no schema for this file name (want exec-request*, exec-result*, exec-refusal* or report*)", name)
			}
			if schemas[s] == nil {
				schemas[s] = compileSchema(t, s)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateJSON(schemas[s], data); err != nil {
				t.Errorf("%s does not satisfy %s:\n%v", name, s, err)
			}
		})
	}
}

// exampleMarker is the comment in docs/json.md that names the file a
// following ```json block shows.
var exampleMarker = regexp.MustCompile("(?s)<!-- example: ([a-z0-9.-]+) -->\\s*```json\\n(.*?)```")

// TestSchemaDocBlocks checks that every example in docs/json.md is one of the
// validated example files, byte for byte after normalising the JSON.
func TestSchemaDocBlocks(t *testing.T) {
	doc, err := os.ReadFile(jsonDoc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := exampleMarker.FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s: no <!-- example: FILE --> blocks", jsonDoc)
	}
	if n := bytes.Count(doc, []byte("```json")); n != len(blocks) {
		t.Errorf("%s: %d json blocks but %d carry an example marker", jsonDoc, n, len(blocks))
	}
	for _, b := range blocks {
		name := string(b[1])
		file, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Errorf("docs/json.md shows %s: %v", name, err)
			continue
		}
		if got, want := normJSON(t, name+" in json.md", b[2]), normJSON(t, name, file); got != want {
			t.Errorf("docs/json.md block for %s differs from the file:\n got %s\nwant %s", name, got, want)
		}
	}
}

func normJSON(t *testing.T, what string, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// execMain runs `sbx exec` in-process on req and returns its status and streams.
func execMain(t *testing.T, req string) (int, []byte, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main([]string{"exec"}, Stdio{In: strings.NewReader(req), Out: &out, Err: &errb})
	return code, out.Bytes(), errb.String()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSchemaExecOutput(t *testing.T) {
	result := compileSchema(t, resultSchema)
	tmp := t.TempDir()
	notExec := filepath.Join(tmp, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		req      map[string]any
		wantCode int // the command's exit_code in the result
		check    func(t *testing.T, res map[string]any)
	}{
		{name: "read-only echo", req: map[string]any{"command": []string{"/bin/echo", "hi"}, "cwd": tmp, "sandbox_mode": "read-only"},
			check: func(t *testing.T, res map[string]any) {
				if res["stdout"] != "hi\n" {
					t.Errorf("stdout = %q, want %q", res["stdout"], "hi\n")
				}
			}},
		{name: "workspace-write without .git", req: map[string]any{"command": []string{"/bin/true"}, "cwd": t.TempDir(), "sandbox_mode": "workspace-write"}},
		{name: "network on", req: map[string]any{"command": []string{"/bin/true"}, "cwd": tmp, "network_access": true,
			"additional_permissions": map[string]any{"file_system": map[string]any{"read": []string{"/usr"}}}, "preauthorized": true}},
		{name: "danger-full-access", req: map[string]any{"command": []string{"/bin/true"}, "cwd": tmp, "sandbox_mode": "danger-full-access"}},
		{name: "exit status and stderr", req: map[string]any{"command": []string{"/bin/sh", "-c", "echo oops >&2; exit 3"}, "cwd": tmp, "env": map[string]string{"X": "1"}},
			wantCode: 3},
		{name: "killed by signal", req: map[string]any{"command": []string{"/bin/sh", "-c", "kill -TERM $$"}, "cwd": tmp},
			wantCode: 128 + 15},
		{name: "timeout", req: map[string]any{"command": []string{"/bin/sleep", "5"}, "cwd": tmp, "timeout_ms": 50},
			wantCode: 128 + 9,
			check: func(t *testing.T, res map[string]any) {
				if res["timed_out"] != true || res["killed_by"] != "timeout" {
					t.Errorf("timed_out = %v, killed_by = %v; want true, timeout", res["timed_out"], res["killed_by"])
				}
			}},
		{name: "truncated output", req: map[string]any{"command": []string{"/bin/sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, "cwd": tmp, "max_output_bytes": 100},
			check: func(t *testing.T, res map[string]any) {
				if res["stdout_truncated"] != true || !strings.Contains(res["stdout"].(string), "bytes truncated") {
					t.Errorf("stdout_truncated = %v, stdout = %q; want true and a truncation marker", res["stdout_truncated"], res["stdout"])
				}
			}},
		{name: "denied write with retry hint", req: map[string]any{"command": []string{"/bin/sh", "-c", "echo x > denied.txt"}, "cwd": tmp},
			wantCode: 2,
			check: func(t *testing.T, res map[string]any) {
				if d, _ := res["denials"].([]any); len(d) == 0 || res["retry"] == nil {
					t.Logf("no denial reported (denials %v, degraded %v): only the schema was checked", res["denials"], res["degraded"])
				}
			}},
		{name: "stdin text", req: map[string]any{"command": []string{"/bin/cat"}, "cwd": tmp, "stdin": "in\n"},
			check: func(t *testing.T, res map[string]any) {
				if res["stdout"] != "in\n" {
					t.Errorf("stdout = %q, want %q", res["stdout"], "in\n")
				}
			}},
		{name: "pty", req: map[string]any{"command": []string{"/bin/sh", "-c", "stty size; echo err >&2"}, "cwd": tmp, "pty": map[string]any{"rows": 7}},
			check: func(t *testing.T, res map[string]any) {
				if res["stdout"] != "7 80\r\nerr\r\n" || res["stderr"] != "" || res["enforcement"].(map[string]any)["pty"] != true {
					t.Errorf("stdout = %q, stderr = %q, enforcement.pty = %v; want the size, stderr merged, true",
						res["stdout"], res["stderr"], res["enforcement"].(map[string]any)["pty"])
				}
			}},
		{name: "shell script", req: map[string]any{"shell": map[string]any{"kind": "sh", "script": "echo hi"}, "cwd": tmp, "env_policy": map[string]any{"mode": "clean"}, "env": map[string]string{"X": "1"}}},
		{name: "not executable", req: map[string]any{"command": []string{notExec}, "cwd": tmp},
			wantCode: 126,
			check: func(t *testing.T, res map[string]any) {
				if res["error"] != nil {
					return
				}
				// KNOWN GAP (docs/json.md): after a stage launch the exec
				// failure is reported by the stage on the command's stderr.
				launch := res["enforcement"].(map[string]any)["launch"]
				if launch != "stage" || !strings.Contains(res["stderr"].(string), notExec) {
					t.Errorf("no error field for a command that did not start (launch %v, stderr %q)", launch, res["stderr"])
					return
				}
				t.Logf("KNOWN GAP: launch stage reports the exec failure only in stderr: %q", res["stderr"])
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := execMain(t, mustJSON(tt.req))
			if code != 0 {
				t.Fatalf("sbx exec = %d, want 0; stderr: %s; stdout: %s", code, stderr, out)
			}
			if err := validateJSON(result, out); err != nil {
				t.Fatalf("result does not satisfy %s:\n%v\n%s", resultSchema, err, out)
			}
			var res map[string]any
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			if got := int(res["exit_code"].(float64)); got != tt.wantCode {
				t.Errorf("exit_code = %d, want %d", got, tt.wantCode)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// TestSchemaExecNotFound: the result for a command that is not found (127)
// has the enforcement of the plan it would have run under (it once had an
// empty one, which the schema rejects) and an exec_failed error.
func TestSchemaExecNotFound(t *testing.T) {
	result := compileSchema(t, resultSchema)
	code, out, stderr := execMain(t, mustJSON(map[string]any{"command": []string{"/nonexistent/cmd"}, "cwd": t.TempDir()}))
	if code != 0 {
		t.Fatalf("sbx exec = %d, want 0; stderr: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res["exit_code"] != float64(127) || res["error"] == nil {
		t.Errorf("exit_code = %v, error = %v; want 127 and an error", res["exit_code"], res["error"])
	}
	if err := validateJSON(result, out); err != nil {
		t.Errorf("the 127 result does not satisfy the schema:\n%v", err)
	}
}

func TestSchemaRunReport(t *testing.T) {
	report := compileSchema(t, reportSchema)
	for _, args := range [][]string{
		{"--mode", "read-only"},
		{"--mode", "workspace-write"},
		{"--mode", "workspace-write", "--network"},
		{"--mode", "danger-full-access"},
		{"--mode", "read-only", "--", "/bin/sh", "-c", "echo x > denied.txt || true"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "report.json")
			var out, errb bytes.Buffer
			argv := append([]string{"run", "--cwd", t.TempDir(), "--report", f}, args...)
			if !slices.Contains(args, "--") {
				argv = append(argv, "--", "/bin/true")
			}
			if code := Main(argv, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
				t.Fatalf("sbx %s = %d, want 0; stderr: %s", strings.Join(argv, " "), code, errb.String())
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateJSON(report, data); err != nil {
				t.Errorf("report does not satisfy %s:\n%v\n%s", reportSchema, err, data)
			}
		})
	}
}

// TestSchemaRejects checks that a request the schema rejects is also refused
// by sbx: exit 125, a refusal object on stdout, the field named on stderr.
func TestSchemaRejects(t *testing.T) {
	request, result := compileSchema(t, requestSchema), compileSchema(t, resultSchema)
	cwd := t.TempDir()
	tests := []struct {
		name      string
		req       string
		wantField string // named in sbx's error
	}{
		{"unknown field", `{"command":["/bin/true"],"cwd":"` + cwd + `","bogus":1}`, "bogus"},
		{"unknown nested field", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"file_system":{"wirte":["x"]}}}`, "additional_permissions.file_system.wirte"},
		{"unknown network field", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"network":{"enabled":true,"proxy":"x"}}}`, "additional_permissions.network.proxy"},
		{"allowed_domains not an array", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"network":{"enabled":true,"allowed_domains":"pypi.org"}}}`, "additional_permissions.network.allowed_domains"},
		{"denied_domains entry not a string", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"network":{"enabled":false,"denied_domains":[1]}}}`, "additional_permissions.network.denied_domains"},
		{"resolve not an array", `{"command":["/bin/true"],"cwd":"` + cwd + `","resolve":"x.test:80:127.0.0.1"}`, "resolve"},
		{"resolve entry without an address", `{"command":["/bin/true"],"cwd":"` + cwd + `","resolve":["x.test:80"]}`, "resolve[0]"},
		{"resolve entry with a bad port", `{"command":["/bin/true"],"cwd":"` + cwd + `","resolve":["x.test:http:127.0.0.1"]}`, "resolve[0]"},
		{"missing cwd", `{"command":["/bin/true"]}`, "cwd"},
		{"empty command", `{"command":[],"cwd":"` + cwd + `"}`, "command"},
		{"empty argv0", `{"command":[""],"cwd":"` + cwd + `"}`, "command"},
		{"unknown mode", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_mode":"writable"}`, "sandbox mode"},
		{"negative timeout", `{"command":["/bin/true"],"cwd":"` + cwd + `","timeout_ms":-1}`, "timeout_ms"},
		{"negative max output", `{"command":["/bin/true"],"cwd":"` + cwd + `","max_output_bytes":-1}`, "max_output_bytes"},
		{"unknown required feature", `{"command":["/bin/true"],"cwd":"` + cwd + `","require":["teleport"]}`, "require"},
		{"wrong type", `{"command":"/bin/true","cwd":"` + cwd + `"}`, "command"},
		{"require_escalated without escalate_to", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"require_escalated","justification":"x"}`, "escalate_to"},
		{"escalate_to without require_escalated", `{"command":["/bin/true"],"cwd":"` + cwd + `","escalate_to":"danger-full-access"}`, "escalate_to"},
		{"escalation without justification", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"require_escalated","escalate_to":"danger-full-access"}`, "justification"},
		{"empty justification", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"with_additional_permissions","justification":"","additional_permissions":{"network":{"enabled":true}}}`, "justification"},
		{"justification without escalation", `{"command":["/bin/true"],"cwd":"` + cwd + `","justification":"x"}`, "justification"},
		{"justification with use_default", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"use_default","justification":"x"}`, "justification"},
		{"unknown sandbox_permissions", `{"command":["/bin/true"],"cwd":"` + cwd + `","sandbox_permissions":"please"}`, "sandbox_permissions"},
		{"unknown approval policy", `{"command":["/bin/true"],"cwd":"` + cwd + `","approval_policy":"sometimes"}`, "approval policy"},
		{"command and shell", `{"command":["/bin/true"],"shell":{"kind":"sh","script":"true"},"cwd":"` + cwd + `"}`, "shell"},
		{"neither command nor shell", `{"cwd":"` + cwd + `"}`, "command"},
		{"unknown shell", `{"shell":{"kind":"fish","script":"true"},"cwd":"` + cwd + `"}`, "shell"},
		{"env_policy.set", `{"command":["/bin/true"],"cwd":"` + cwd + `","env_policy":{"set":{"A":"1"}}}`, "env_policy.set"},
		{"unknown env_policy mode", `{"command":["/bin/true"],"cwd":"` + cwd + `","env_policy":{"mode":"scrub"}}`, "env_policy.mode"},
		{"pty rows zero", `{"command":["/bin/true"],"cwd":"` + cwd + `","pty":{"rows":0}}`, "pty.rows"},
		{"pty cols too big", `{"command":["/bin/true"],"cwd":"` + cwd + `","pty":{"cols":70000}}`, "pty.cols"},
		{"pty unknown field", `{"command":["/bin/true"],"cwd":"` + cwd + `","pty":{"width":80}}`, "pty.width"},
		{"pty not an object", `{"command":["/bin/true"],"cwd":"` + cwd + `","pty":true}`, "pty"},
		{"stdin over the cap", `{"command":["/bin/true"],"cwd":"` + cwd + `","stdin":"` + strings.Repeat("x", maxStdinBytes+1) + `"}`, "stdin"},
		{"stdin not a string", `{"command":["/bin/true"],"cwd":"` + cwd + `","stdin":["x"]}`, "stdin"},
		{"unknown grants field", `{"command":["/bin/true"],"cwd":"` + cwd + `","grants":{"session":{"network":{"enabled":true}},"forever":{}}}`, "grants.forever"},
		{"case variant of a field", `{"command":["/bin/true"],"cwd":"` + cwd + `","SANDBOX_MODE":"danger-full-access"}`, "SANDBOX_MODE: unknown field"},
		{"case variant of a nested field", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"Network":{"enabled":true}}}`, "additional_permissions.Network: unknown field"},
		{"network without enabled", `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"network":{}}}`, "additional_permissions.network.enabled: required"},
		{"grant network without enabled", `{"command":["/bin/true"],"cwd":"` + cwd + `","grants":{"turn":{"network":{}}}}`, "grants.turn.network.enabled: required"},
		{"top-level array", `[{"command":["/bin/true"],"cwd":"` + cwd + `"}]`, "expected a JSON object, got JSON array"},
		{"shell without kind", `{"shell":{"script":"true"},"cwd":"` + cwd + `"}`, "shell"},
		{"fs without op", `{"fs":{"path":"x"},"cwd":"` + cwd + `"}`, "fs.op"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRefusal(t, request, result, tt.req, tt.wantField) })
	}
}

// wantRefusal checks that the request schema rejects req and that sbx exec
// refuses it: exit 125, a refusal object on stdout, field named on stderr.
func wantRefusal(t *testing.T, request, result *jsonschema.Schema, req, field string) {
	t.Helper()
	if err := validateJSON(request, []byte(req)); err == nil {
		t.Errorf("%s accepts %s", requestSchema, req)
	}
	code, out, stderr := execMain(t, req)
	if code != ExitRefused {
		t.Errorf("sbx exec = %d, want %d; stdout: %s", code, ExitRefused, out)
	}
	if err := validateJSON(result, out); err != nil {
		t.Errorf("refusal does not satisfy %s:\n%v\n%s", resultSchema, err, out)
	}
	if !strings.Contains(stderr, field) {
		t.Errorf("stderr %q does not name %q", stderr, field)
	}
}

// TestSchemaRejectsOutput checks that the output schemas are strict: an extra
// or misspelt field, or a value outside an enum, is an error.
func TestSchemaRejectsOutput(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(examplesDir, "exec-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		edit   func(m map[string]any)
	}{
		{"extra top-level field", resultSchema, func(m map[string]any) { m["stdot"] = "" }},
		{"missing stdout", resultSchema, func(m map[string]any) { delete(m, "stdout") }},
		{"refusal with extra field", resultSchema, func(m map[string]any) {
			for k := range m {
				delete(m, k)
			}
			m["error"], m["exit_code"] = "x", 125
		}},
		{"unknown launch", reportSchema, func(m map[string]any) { m["enforcement"].(map[string]any)["launch"] = "fork" }},
		{"extra enforcement field", reportSchema, func(m map[string]any) { m["enforcement"].(map[string]any)["selinux"] = true }},
		{"unknown confidence", reportSchema, func(m map[string]any) {
			m["denials"] = []any{map[string]any{"operation": "write", "pid": 1, "source": "x", "confidence": "guessed", "count": 1}}
		}},
		{"unknown downgrade feature", reportSchema, func(m map[string]any) {
			m["degraded"] = []any{map[string]any{"feature": "magic", "reason": "x"}}
		}},
		{"unknown mode", reportSchema, func(m map[string]any) { m["mode"] = "yolo" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(base, &m); err != nil {
				t.Fatal(err)
			}
			if tt.schema == reportSchema {
				for _, k := range []string{"stdout", "stderr", "stdout_truncated", "stderr_truncated"} {
					delete(m, k)
				}
			}
			tt.edit(m)
			if err := validateJSON(compileSchema(t, tt.schema), []byte(mustJSON(m))); err == nil {
				t.Errorf("%s accepts %s", tt.schema, mustJSON(m))
			}
		})
	}
}

// schemaDoc is a schema file decoded as plain JSON, for comparing its
// property names and enums with the Go types.
type schemaDoc map[string]any

func loadSchemaDoc(t *testing.T, name string) schemaDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(schemaDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var d schemaDoc
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// at walks a slash-separated path of object keys ("$defs/report/properties").
func (d schemaDoc) at(t *testing.T, path string) map[string]any {
	t.Helper()
	cur := map[string]any(d)
	for _, k := range strings.Split(path, "/") {
		next, ok := cur[k].(map[string]any)
		if !ok {
			t.Fatalf("schema has no object at %s", path)
		}
		cur = next
	}
	return cur
}

func (d schemaDoc) propertyNames(t *testing.T, path string) []string {
	if path == "" {
		return sortedKeys(d.at(t, "properties"))
	}
	return sortedKeys(d.at(t, path+"/properties"))
}

func (d schemaDoc) enum(t *testing.T, path string) []string {
	t.Helper()
	raw, ok := d.at(t, path)["enum"].([]any)
	if !ok {
		t.Fatalf("schema has no enum at %s", path)
	}
	var out []string
	for _, v := range raw {
		out = append(out, v.(string))
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jsonNames returns the JSON field names of struct type t, with the fields of
// embedded structs flattened the way encoding/json does.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonNames(f.Type)...)
		case !f.IsExported() || name == "-":
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// enumValues lists the values of an int-based wire enum: 0, 1, ... up to the
// first one that does not marshal to a name of its own.
func enumValues[E interface {
	~int
	fmt.Stringer
}]() []E {
	var out []E
	for i := 0; i < 100; i++ {
		e := E(i)
		if strings.Contains(e.String(), "(") {
			break
		}
		out = append(out, e)
	}
	return out
}

func wireNames[E fmt.Stringer](values []E) []string {
	var out []string
	for _, v := range values {
		out = append(out, v.String())
	}
	return out
}

// envModes are the profiles.EnvMode values (profiles has no list of them).
var envModes = []profiles.EnvMode{profiles.EnvInherit, profiles.EnvClean, profiles.EnvAllowList}

func stringsOf[S ~string](values []S) []string {
	var out []string
	for _, v := range values {
		out = append(out, string(v))
	}
	return out
}

// TestSchemaMatchesGoTypes keeps the schemas and the Go wire types in step:
// a field added to one and not the other fails here.
func TestSchemaMatchesGoTypes(t *testing.T) {
	req, res, rep := loadSchemaDoc(t, requestSchema), loadSchemaDoc(t, resultSchema), loadSchemaDoc(t, reportSchema)
	reportNames := jsonNames(reflect.TypeFor[callReport]())
	// The last line of a streamed call is a streamResult: the same fields plus event.
	resultOwn := slices.DeleteFunc(jsonNames(reflect.TypeFor[streamResult]()), func(n string) bool { return slices.Contains(reportNames, n) })
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"execRequest", req.propertyNames(t, ""), jsonNames(reflect.TypeFor[execRequest]())},
		{"profiles.Profile", req.propertyNames(t, "$defs/profile"), jsonNames(reflect.TypeFor[profiles.Profile]())},
		{"profiles.Network", req.propertyNames(t, "$defs/profile/properties/network"), jsonNames(reflect.TypeFor[profiles.Network]())},
		{"profiles.FileSystem", req.propertyNames(t, "$defs/profile/properties/file_system"), jsonNames(reflect.TypeFor[profiles.FileSystem]())},
		{"profiles.Grants", req.propertyNames(t, "$defs/grants"), jsonNames(reflect.TypeFor[profiles.Grants]())},
		// env_policy.set is refused by sbx exec (the top-level env sets variables).
		{"profiles.EnvPolicy", req.propertyNames(t, "$defs/env_policy"), slices.DeleteFunc(jsonNames(reflect.TypeFor[profiles.EnvPolicy]()), func(n string) bool { return n == "set" })},
		{"shells.Spec", req.propertyNames(t, "$defs/shell"), jsonNames(reflect.TypeFor[shells.Spec]())},
		{"execResult (own fields)", res.propertyNames(t, "$defs/result"), resultOwn},
		{"callReport", rep.propertyNames(t, "$defs/report"), reportNames},
		{"call.Permissions", rep.propertyNames(t, "$defs/permissions"), jsonNames(reflect.TypeFor[call.Permissions]())},
		{"escalate.Removal", rep.propertyNames(t, "$defs/removal"), jsonNames(reflect.TypeFor[escalate.Removal]())},
		{"profiles.EnvReport", rep.propertyNames(t, "$defs/env"), jsonNames(reflect.TypeFor[profiles.EnvReport]())},
		{"call.RetryHint", rep.propertyNames(t, "$defs/retry"), jsonNames(reflect.TypeFor[call.RetryHint]())},
		{"escalate.Unresolved", rep.propertyNames(t, "$defs/unresolved"), jsonNames(reflect.TypeFor[escalate.Unresolved]())},
		{"report.Enforcement", rep.propertyNames(t, "$defs/enforcement"), jsonNames(reflect.TypeFor[report.Enforcement]())},
		{"report.LandlockInfo", rep.propertyNames(t, "$defs/landlock"), jsonNames(reflect.TypeFor[report.LandlockInfo]())},
		{"report.SeccompInfo", rep.propertyNames(t, "$defs/seccomp"), jsonNames(reflect.TypeFor[report.SeccompInfo]())},
		{"report.Downgrade", rep.propertyNames(t, "$defs/downgrade"), jsonNames(reflect.TypeFor[report.Downgrade]())},
		{"report.Denial", rep.propertyNames(t, "$defs/denial"), jsonNames(reflect.TypeFor[report.Denial]())},
		{"report.Address", rep.propertyNames(t, "$defs/address"), jsonNames(reflect.TypeFor[report.Address]())},
	}
	var modes []string
	for _, m := range profiles.Modes() {
		modes = append(modes, m.String())
	}
	features := slices.Sorted(slices.Values(report.FeatureNames()))
	enums := []struct {
		name string
		got  []string
		want []string
	}{
		{"request sandbox_mode", req.enum(t, "properties/sandbox_mode"), modes},
		{"report mode", rep.enum(t, "$defs/mode"), modes},
		{"request require", req.enum(t, "properties/require/items"), features},
		{"report degraded feature", rep.enum(t, "$defs/downgrade/properties/feature"), features},
		{"request escalate_to", req.enum(t, "properties/escalate_to"), modes},
		{"request approval_policy", req.enum(t, "$defs/approval_policy_name"), wireNames(profiles.ApprovalPolicies())},
		{"request sandbox_permissions", req.enum(t, "properties/sandbox_permissions"), wireNames(enumValues[profiles.SandboxPermissions]())},
		{"report permissions.via", rep.enum(t, "$defs/permissions/properties/via"), wireNames(enumValues[escalate.Via]())},
		{"request shell kind", req.enum(t, "$defs/shell/properties/kind"), stringsOf(shells.Kinds)},
		{"request env_policy mode", req.enum(t, "$defs/env_policy/properties/mode"), stringsOf(envModes)},
		{"report env mode", rep.enum(t, "$defs/env/properties/mode"), stringsOf(envModes)},
	}
	for _, e := range enums {
		got := slices.Sorted(slices.Values(e.got))
		want := slices.Sorted(slices.Values(e.want))
		tests = append(tests, struct {
			name string
			got  []string
			want []string
		}{e.name + " enum", got, want})
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: schema has %v, Go has %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestSchemaFullGoValues marshals Go values with every field set and checks
// the schemas accept them, so the types in the schema match the Go types.
func TestSchemaFullGoValues(t *testing.T) {
	sig := 9
	mode := profiles.WorkspaceWrite
	escalated, target, approval := profiles.RequireEscalated, profiles.DangerFullAccess, profiles.ApprovalOnRequest
	full := profiles.Profile{Network: &profiles.Network{Enabled: true, AllowedDomains: []string{"pypi.org", "*.pythonhosted.org:8443"}, DeniedDomains: []string{"evil.pythonhosted.org"}, AllowPrivateAddresses: true}, FileSystem: &profiles.FileSystem{Read: []string{"/opt"}, Write: []string{"/out"}}}
	enf := report.Report{
		ExitCode: 137, Signal: &sig, SignalName: "SIGKILL", Mode: "workspace-write",
		Enforcement: report.Enforcement{
			Platform: "linux", Launch: "stage",
			Landlock:         &report.LandlockInfo{ABI: 6, FS: true, NetTCP: true, Scopes: []string{"signal"}, Rules: 3, Features: []string{"refer"}},
			Seccomp:          &report.SeccompInfo{Sockets: "unix-only", Rules: 40},
			NetworkNamespace: true, MountNamespace: true, UserNamespace: true, NoNewPrivs: true,
			NewSession: true, PIDNamespace: true, ParentDeathKill: true, ClosedFDs: true, ReadOnlyMounts: []string{"/w/.git"}, MaskedPaths: []string{"/home/me/.ssh"},
		},
		Degraded: []report.Downgrade{{Feature: "landlock-scope", Reason: "ABI 5"}},
		Denials: []report.Denial{
			{Operation: "write", Path: "/etc/x", PID: 42, Source: "landlock-audit", Confidence: "observed", Count: 3, Reason: "outside writable roots"},
			{Operation: "connect", Address: &report.Address{Family: "inet", Address: "127.0.0.1", Port: 80}, Syscall: "connect", PID: 43, Source: "supervisor", Confidence: "inferred", Count: 1},
		},
		DenialsDropped: 2, TimedOut: true, KilledBy: "signal", KilledBySignal: "SIGINT", DurationMS: 1000,
		Resources: report.Resources{Mechanism: "cgroup-v1+rlimit", Limits: report.Limits{MemoryBytes: 64 << 20, Pids: 10, CPUs: 0.5},
			PeakMemoryBytes: 1 << 20, PeakMemorySource: "cgroup", CPUTimeMS: 12, OOMKills: 1},
	}
	req := execRequest{
		Command: []string{"make"}, Cwd: "/w", SandboxMode: &mode, WritableRoots: []string{"/cache"},
		ExcludeTmp: true, ExcludeTmpdir: true, ReadOnly: []string{"/w/.env"}, NetworkAccess: true,
		Resolve: []string{"pypi.org:443:127.0.0.1,::1"},
		AdditionalPermissions: &profiles.Profile{Network: &profiles.Network{Enabled: true},
			FileSystem: &profiles.FileSystem{Read: []string{"/opt"}, Write: []string{"out"}}},
		Env: map[string]string{"CI": "1"}, TimeoutMS: 10, MaxOutputBytes: 10, Require: []string{"netns"},
		Limits: &report.LimitsRequest{MemoryBytes: new(int64(64 << 20)), Pids: new(10), CPUs: new(0.5)}, Stream: true,
		CallID: "c1", EnvironmentID: "e1", Grants: &profiles.Grants{Session: full, Turn: full},
		SandboxPermissions: &escalated, Justification: "needs the network", EscalateTo: &target,
		ApprovalPolicy: &approval, Approver: []string{"/usr/bin/approve"}, Guard: "/etc/sbx/guard.json",
		EnvPolicy: &profiles.EnvPolicy{Mode: profiles.EnvAllowList, Allow: []string{"GO*"}}, KillGraceMS: 500,
	}
	shellReq := execRequest{Cwd: "/w", Shell: &shells.Spec{Kind: shells.Bash, Script: "make", Login: true, Path: "/bin/bash"}}
	empty := ""
	rep := callReport{CallID: "c1", Report: enf, Permissions: call.Permissions{
		StandingMode: profiles.ReadOnly, Mode: profiles.DangerFullAccess, Via: escalate.ViaApproval,
		Preauthorized: full, Session: full, Turn: full, Call: full,
		GuardRemoved: []escalate.Removal{{What: "write_root", Path: "/etc", Reason: "denied by the guard"}, {What: "network", Reason: "deny_network"}},
	}, Env: profiles.EnvReport{Mode: profiles.EnvInherit, Stripped: []string{"GH_TOKEN"}, Set: []string{"CI"}},
		Retry: &call.RetryHint{Retry: escalate.Retry{SandboxPermissions: &escalated, EscalateTo: &target, Justification: &empty,
			AdditionalPermissions: &full, Reason: "x", Grant: &full,
			Unresolved: []escalate.Unresolved{{Operation: "connect", Address: &report.Address{Family: "inet6", Address: "::1", Port: 1}, Reason: "forbidden by guard"}}},
			Argv: []string{"run", "--network", "--", "true"}, Request: map[string]any{"command": []string{"true"}}},
	}
	res := execResult{CallReport: rep, Stdout: "a", Stderr: "b", StdoutTruncated: true, StderrTruncated: true, Error: "start: x",
		ErrorDetail: &errorObject{Kind: errExecFailed, Message: "start: x", Errno: "ENOENT"}}
	refusals := []refusal{
		newRefusal(&strictjson.FieldError{Field: "cwd", Err: errors.New("required")}),
		newRefusal(fmt.Errorf("approval denied: %w", escalate.ErrRejected)),
		newRefusal(&report.UnsupportedFeatureError{Feature: "netns", Reason: "x"}),
		newRefusal(internalError{errors.New("pipe: too many open files")}),
	}
	event := outputEvent{Event: "output", Stream: "stdout", Data: "x", CallID: "c1"}
	for _, c := range []struct {
		schema string
		v      any
	}{{reportSchema, rep}, {requestSchema, req}, {requestSchema, shellReq}, {resultSchema, res}, {resultSchema, event},
		{resultSchema, refusals[0]}, {resultSchema, refusals[1]}, {resultSchema, refusals[2]}, {resultSchema, refusals[3]}} {
		data := mustJSON(c.v)
		if c.schema == requestSchema {
			// execRequest has no omitempty: drop the nulls of unset
			// fields, which the schema does not allow (omit them instead).
			var m map[string]any
			json.Unmarshal([]byte(data), &m)
			maps.DeleteFunc(m, func(_ string, v any) bool { return v == nil })
			data = mustJSON(m)
		}
		if err := validateJSON(compileSchema(t, c.schema), []byte(data)); err != nil {
			t.Errorf("%s rejects a full %T:\n%v\n%s", c.schema, c.v, err, data)
		}
	}
}

// TestSchemaExecStream: with "stream": true every line is an output event
// or the final result, each valid; the events carry the output in order
// (base64 for bytes that are not UTF-8) and max_output_bytes caps them.
func TestSchemaExecStream(t *testing.T) {
	result := compileSchema(t, resultSchema)
	tmp := t.TempDir()
	for _, tt := range []struct {
		name, script   string
		max            int
		stdout, stderr string
		truncated      bool
	}{
		{name: "text and bytes", script: `echo one; echo err >&2; printf '\377'`, stdout: "one\n\xff", stderr: "err\n"},
		{name: "capped", script: "head -c 5000 /dev/zero | tr '\\0' x", max: 100, stdout: strings.Repeat("x", 100), truncated: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := execMain(t, mustJSON(map[string]any{"command": []string{"/bin/sh", "-c", tt.script}, "cwd": tmp, "stream": true, "max_output_bytes": tt.max}))
			if code != 0 {
				t.Fatalf("sbx exec = %d; stderr %s", code, stderr)
			}
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			var got [2]bytes.Buffer
			for i, line := range lines {
				if err := validateJSON(result, line); err != nil {
					t.Fatalf("line %d does not satisfy %s: %v\n%s", i, resultSchema, err, line)
				}
				var ev struct {
					Event, Stream, Data string
					DataBase64          []byte `json:"data_base64"`
					StdoutTruncated     bool   `json:"stdout_truncated"`
				}
				json.Unmarshal(line, &ev)
				switch {
				case i == len(lines)-1:
					if ev.Event != "result" || ev.StdoutTruncated != tt.truncated {
						t.Errorf("last line: event %q stdout_truncated %t, want result, %t", ev.Event, ev.StdoutTruncated, tt.truncated)
					}
				case ev.Event != "output":
					t.Errorf("line %d: event %q before the result", i, ev.Event)
				default:
					k := 0
					if ev.Stream == "stderr" {
						k = 1
					}
					got[k].WriteString(ev.Data)
					got[k].Write(ev.DataBase64)
				}
			}
			if got[0].String() != tt.stdout || got[1].String() != tt.stderr {
				t.Errorf("streamed stdout %q stderr %q, want %q, %q", got[0].String(), got[1].String(), tt.stdout, tt.stderr)
			}
		})
	}
}

// requiredNames lists the JSON fields of struct type t that are always
// printed (no omitempty), embedded structs flattened; and, for request
// types, the fields strictjson.Decode requires (`strict:"required"`).
func requiredNames(t reflect.Type, input bool) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, requiredNames(f.Type, input)...)
		case !f.IsExported() || name == "-":
		case input && f.Tag.Get("strict") == "required", !input && !slices.Contains(strings.Split(opts, ","), "omitempty"):
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestSchemaRequiredMatchesGo keeps the schemas' "required" lists true: an
// output field is required exactly when sbx always prints it (no
// omitempty), and a request field exactly when sbx refuses its absence.
func TestSchemaRequiredMatchesGo(t *testing.T) {
	req, res, rep := loadSchemaDoc(t, requestSchema), loadSchemaDoc(t, resultSchema), loadSchemaDoc(t, reportSchema)
	required := func(d schemaDoc, path string) []string {
		obj := map[string]any(d)
		if path != "" {
			obj = d.at(t, path)
		}
		var out []string
		for _, v := range asSlice(obj["required"]) {
			out = append(out, v.(string))
		}
		sort.Strings(out)
		return out
	}
	reportNames := requiredNames(reflect.TypeFor[callReport](), false)
	resultOwn := slices.DeleteFunc(requiredNames(reflect.TypeFor[execResult](), false), func(n string) bool { return slices.Contains(reportNames, n) })
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		// cwd is refused when absent by sbx exec itself ("cwd: required").
		{"execRequest", required(req, ""), append(requiredNames(reflect.TypeFor[execRequest](), true), "cwd")},
		{"profiles.Network", required(req, "$defs/profile/properties/network"), requiredNames(reflect.TypeFor[profiles.Network](), true)},
		{"profiles.Profile", required(req, "$defs/profile"), requiredNames(reflect.TypeFor[profiles.Profile](), true)},
		{"profiles.FileSystem", required(req, "$defs/profile/properties/file_system"), requiredNames(reflect.TypeFor[profiles.FileSystem](), true)},
		{"profiles.Grants", required(req, "$defs/grants"), requiredNames(reflect.TypeFor[profiles.Grants](), true)},
		// kind and op are refused when absent by shells.ParseKind and
		// fsop.Op.Validate (TestSchemaRejects).
		{"shells.Spec", required(req, "$defs/shell"), append(requiredNames(reflect.TypeFor[shells.Spec](), true), "kind")},
		{"execResult (own fields)", required(res, "$defs/result"), resultOwn},
		{"callReport", required(rep, "$defs/report"), reportNames},
		{"call.Permissions", required(rep, "$defs/permissions"), requiredNames(reflect.TypeFor[call.Permissions](), false)},
		{"escalate.Removal", required(rep, "$defs/removal"), requiredNames(reflect.TypeFor[escalate.Removal](), false)},
		{"profiles.EnvReport", required(rep, "$defs/env"), requiredNames(reflect.TypeFor[profiles.EnvReport](), false)},
		{"escalate.Unresolved", required(rep, "$defs/unresolved"), requiredNames(reflect.TypeFor[escalate.Unresolved](), false)},
		{"report.Enforcement", required(rep, "$defs/enforcement"), requiredNames(reflect.TypeFor[report.Enforcement](), false)},
		{"report.LandlockInfo", required(rep, "$defs/landlock"), requiredNames(reflect.TypeFor[report.LandlockInfo](), false)},
		{"report.SeccompInfo", required(rep, "$defs/seccomp"), requiredNames(reflect.TypeFor[report.SeccompInfo](), false)},
		{"report.Downgrade", required(rep, "$defs/downgrade"), requiredNames(reflect.TypeFor[report.Downgrade](), false)},
		{"report.Denial", required(rep, "$defs/denial"), requiredNames(reflect.TypeFor[report.Denial](), false)},
		{"report.Address", required(rep, "$defs/address"), requiredNames(reflect.TypeFor[report.Address](), false)},
		{"report.Resources", required(rep, "$defs/resources"), requiredNames(reflect.TypeFor[report.Resources](), false)},
		{"fsResult (own fields)", required(res, "$defs/fs_result"), slices.DeleteFunc(requiredNames(reflect.TypeFor[fsResult](), false), func(n string) bool { return slices.Contains(reportNames, n) })},
		{"errorObject", required(res, "$defs/error"), requiredNames(reflect.TypeFor[errorObject](), false)},
	}
	for _, tt := range tests {
		got, want := slices.Sorted(slices.Values(tt.got)), slices.Sorted(slices.Values(tt.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s: schema requires %v, Go %v", tt.name, got, want)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
