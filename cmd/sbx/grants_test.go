package main

import (
	"bytes"
	"strings"
	"testing"
)

// The scripts cannot see exit codes; this pins 125 and the one-line error.
func TestNormalizeGrantExitStatus(t *testing.T) {
	for _, in := range []string{``, `{}`, `{"cwd":"/x","scope":"forever"}`, `{"cwd":"/x","x":1}`, "{\n"} {
		var out, errb bytes.Buffer
		code := Main([]string{"normalize-grant"}, Stdio{In: strings.NewReader(in), Out: &out, Err: &errb})
		if code != ExitRefused || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 ||
			!strings.HasPrefix(errb.String(), "sbx normalize-grant: ") {
			t.Errorf("input %q: exit %d, stdout %q, stderr %q", in, code, out.String(), errb.String())
		}
	}
	var out bytes.Buffer
	if code := Main([]string{"normalize-grant"}, Stdio{In: strings.NewReader(`{"cwd":"/x","requested":{"network":{"enabled":true}}}`), Out: &out, Err: &out}); code != 0 {
		t.Fatalf("valid input: exit %d: %s", code, out.String())
	}
}

func TestPresetsExitStatus(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"presets", "derive", "--mode", "read-only"}, Stdio{Out: &out, Err: &errb}); code != ExitRefused {
		t.Errorf("missing --approval-policy: exit %d", code)
	}
	if code := Main([]string{"presets", "derive", "--bogus"}, Stdio{Out: &out, Err: &errb}); code != ExitRefused {
		t.Errorf("unknown flag: exit %d", code)
	}
	if code := Main([]string{"presets", "--help"}, Stdio{Out: &out, Err: &errb}); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}
