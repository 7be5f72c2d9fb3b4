package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// completionScript writes `sbx completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errb strings.Builder
	if code := Main([]string{"completion", shell}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("sbx completion %s: exit %d: %s", shell, code, errb.String())
	}
	p := filepath.Join(t.TempDir(), "sbx."+shell)
	if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBashCompletion completes words in a scripted bash the way readline
// calls the function: COMP_WORDS split at COMP_WORDBREAKS (so --mode=x is
// "--mode" "=" "x"), COMP_CWORD the word under the cursor.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	script := completionScript(t, "bash")
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"sbx", "run", "--mo"}, "--mode"},
		{[]string{"sbx", "ru"}, "run"},
		{[]string{"sbx", "--vers"}, "--version"},
		{[]string{"sbx", "run", "--mode", ""}, "read-only workspace-write danger-full-access"},
		{[]string{"sbx", "run", "--mode", "=", "w"}, "workspace-write"},
		{[]string{"sbx", "explain", "--preset", ""}, "read-only auto full-access"},
		{[]string{"sbx", "run", "--require", "mask"}, "mask mask-links"},
		{[]string{"sbx", "run", "--shell", "p"}, "pwsh powershell"},
		{[]string{"sbx", "run", "--env-mode", ""}, "inherit clean allow-list"},
		{[]string{"sbx", "run", "--stdin", ""}, "pass close"},
		{[]string{"sbx", "run", "--approval-policy", "on"}, "on-request on-failure"},
		{[]string{"sbx", "run", "--sandbox-permissions", "w"}, "with_additional_permissions"},
		{[]string{"sbx", "fs", "--mode", "workspace-write", "--json", "ap"}, "append apply-patch"},
		{[]string{"sbx", "fs", "write", "ap"}, ""},
		{[]string{"sbx", "presets", "derive", "--la"}, "--last"},
		{[]string{"sbx", "completion", "z"}, "zsh"},
		{[]string{"sbx", "run", "--", "--mo"}, ""},
		{[]string{"sbx", "run", "--network", "--no-den"}, "--no-denial-reports"},
	}
	for _, tt := range tests {
		var words []string
		for _, w := range tt.words {
			words = append(words, shQuote(w))
		}
		prog := "source " + shQuote(script) + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
			itoa(len(tt.words)-1) + `; _sbx; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: bash: %v\n%s", tt.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("complete %q: got %q, want %q", strings.Join(tt.words, " "), got, tt.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestZshFishCompletionSyntax checks the other scripts parse in their shells
// (skipped, saying so, for a shell that is not installed).
func TestZshFishCompletionSyntax(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			bin, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s not installed: its script's syntax is not checked", shell)
			}
			script := completionScript(t, shell)
			if out, err := exec.Command(bin, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

func TestCompletionRefusesBadShell(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		var out, errb strings.Builder
		if code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitRefused || !strings.Contains(errb.String(), "shell") || out.Len() > 0 {
			t.Errorf("sbx %v: exit %d, stdout %q, stderr %q; want 125 naming the shell", args, code, out.String(), errb.String())
		}
	}
}
