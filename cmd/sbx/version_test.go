package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/version"
)

func TestVersionCmd(t *testing.T) {
	want := version.Get()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("sbx %v: exit %d, stderr %q", args, code, errb.String())
		}
		if got := out.String(); got != want.String()+"\n" {
			t.Errorf("sbx %v printed %q, want %q", args, got, want.String()+"\n")
		}
	}

	var out, errb bytes.Buffer
	if code := Main([]string{"version", "--json"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("sbx version --json: exit %d, stderr %q", code, errb.String())
	}
	var got version.Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("sbx version --json printed %q: %v", out.String(), err)
	}
	if got != want || got.GoVersion == "" || got.Version == "" {
		t.Errorf("sbx version --json = %+v, want %+v", got, want)
	}

	errb.Reset()
	if code := Main([]string{"version", "extra"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitRefused || !strings.Contains(errb.String(), `"extra"`) {
		t.Errorf("sbx version extra: exit %d, stderr %q; want 125 naming the argument", code, errb.String())
	}
}
