package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecExactKeys: the request escapes of encoding/json's folding and
// last-duplicate-wins (DESIGN.md invariant 4) are refused before anything
// runs: exit 125, the field named, and the command (which would create a
// file) not run. The schema cannot see duplicates (a schema validator
// decodes them away), so these are checked here and not in TestSchemaRejects.
func TestExecExactKeys(t *testing.T) {
	tests := []struct {
		name  string
		req   func(cwd, marker string) string // the request, whose command creates marker
		field string
	}{
		{"case variant of sandbox_mode", func(cwd, m string) string {
			return `{"command":["/bin/touch","` + m + `"],"cwd":"` + cwd + `","SANDBOX_MODE":"danger-full-access"}`
		}, "SANDBOX_MODE: unknown field (did you mean sandbox_mode?)"},
		{"duplicate sandbox_mode", func(cwd, m string) string {
			return `{"command":["/bin/touch","` + m + `"],"cwd":"` + cwd + `","sandbox_mode":"read-only","sandbox_mode":"danger-full-access"}`
		}, "sandbox_mode: duplicate key"},
		{"duplicate command", func(cwd, m string) string {
			return `{"command":["/bin/true"],"cwd":"` + cwd + `","command":["/bin/touch","` + m + `"],"sandbox_mode":"danger-full-access"}`
		}, "command: duplicate key"},
		{"duplicate env key", func(cwd, m string) string {
			return `{"command":["/bin/touch","` + m + `"],"cwd":"` + cwd + `","sandbox_mode":"danger-full-access","env":{"X":"1","X":"2"}}`
		}, "env.X: duplicate key"},
		{"duplicate in a grant", func(cwd, m string) string {
			return `{"command":["/bin/touch","` + m + `"],"cwd":"` + cwd + `","sandbox_mode":"danger-full-access","grants":{"turn":{"network":{"enabled":false,"enabled":true}}}}`
		}, "grants.turn.network.enabled: duplicate key"},
		{"case variant in a shell", func(cwd, m string) string {
			return `{"shell":{"kind":"sh","SCRIPT":"touch ` + m + `"},"cwd":"` + cwd + `","sandbox_mode":"danger-full-access"}`
		}, "shell.SCRIPT: unknown field (did you mean script?)"},
		{"duplicate fs op", func(cwd, m string) string {
			return `{"fs":{"op":"mkdir","op":"write","path":"` + m + `","content":"x"},"cwd":"` + cwd + `","sandbox_mode":"danger-full-access"}`
		}, "fs.op: duplicate key"},
		{"null request", func(cwd, m string) string { return `null` }, "expected a JSON object, got JSON null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			marker := filepath.Join(cwd, "ran")
			code, out, stderr := execMain(t, tt.req(cwd, marker))
			if code != ExitRefused {
				t.Errorf("sbx exec = %d, want %d; stdout %s", code, ExitRefused, out)
			}
			if want := "sbx exec: " + tt.field + "\n"; stderr != want {
				t.Errorf("stderr = %q, want %q", stderr, want)
			}
			var ref struct {
				Error       string `json:"error"`
				ErrorDetail struct {
					Kind string `json:"kind"`
				} `json:"error_detail"`
			}
			if err := json.Unmarshal(out, &ref); err != nil || ref.Error != tt.field || ref.ErrorDetail.Kind != "invalid_request" {
				t.Errorf("stdout = %s, want a refusal naming %q", out, tt.field)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the command ran (%s exists: %v)", marker, err)
			}
		})
	}
}

// TestExecRequestLimit: a request past maxExecRequest is refused without
// being read whole.
func TestExecRequestLimit(t *testing.T) {
	r := &countingReader{left: 64 << 20}
	var out, errb bytes.Buffer
	code := Main([]string{"exec"}, Stdio{In: r, Out: &out, Err: &errb})
	if code != ExitRefused {
		t.Errorf("sbx exec = %d, want %d", code, ExitRefused)
	}
	if want := "16777216 bytes"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr = %q, want it to name the limit (%s)", errb.String(), want)
	}
	if read := int64(64<<20) - r.left; read > maxExecRequest+(1<<16) {
		t.Errorf("read %d bytes of stdin, want at most the limit %d (and a buffer)", read, maxExecRequest)
	}
}

// countingReader yields left bytes of spaces (valid JSON whitespace).
type countingReader struct{ left int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), c.left)
	for i := range p[:n] {
		p[i] = ' '
	}
	c.left -= n
	return int(n), nil
}

// TestExecResolveRefused: a bad "resolve" entry is refused before
// anything runs, naming the entry (exit 125, the command, which would
// create a file, not run), as sbx run refuses a bad --resolve.
func TestExecResolveRefused(t *testing.T) {
	tests := []struct {
		name, resolve, field string
	}{
		{"not an array", `"x.test:80:127.0.0.1"`, "resolve"},
		{"entry not a string", `[1]`, "resolve"},
		{"no address", `["x.test:80:127.0.0.1", "x.test:443"]`, "resolve[1]"},
		{"port 0", `["x.test:0:127.0.0.1"]`, "resolve[0]"},
		{"port out of range", `["x.test:70000:127.0.0.1"]`, "resolve[0]"},
		{"address not an IP", `["x.test:443:example.org"]`, "resolve[0]"},
		{"bad host", `["a..b:443:127.0.0.1"]`, "resolve[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			marker := filepath.Join(cwd, "ran")
			req := `{"command":["/bin/touch","` + marker + `"],"cwd":"` + cwd + `","sandbox_mode":"workspace-write","preauthorized":true,
				"additional_permissions":{"network":{"enabled":true,"allowed_domains":["x.test"]}},"resolve":` + tt.resolve + `}`
			code, out, stderr := execMain(t, req)
			if code != ExitRefused || !strings.HasPrefix(stderr, "sbx exec: "+tt.field+":") {
				t.Errorf("sbx exec = %d, stderr %q; want %d naming %s; stdout %s", code, stderr, ExitRefused, tt.field, out)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the command ran (%s exists: %v)", marker, err)
			}
		})
	}
}
