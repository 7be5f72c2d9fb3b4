package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireMan finds man, installing man-db when it is missing and the test
// runs as root (the CI container), else skips saying why.
func requireMan(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("man"); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Skip("man not installed, and not root to install man-db: the man pages are not rendered")
	}
	if out, err := exec.Command("apt-get", "install", "-y", "man-db", "groff-base").CombinedOutput(); err != nil {
		t.Skipf("man not installed, and apt-get install man-db groff-base failed: %v\n%s", err, out)
	}
	p, err := exec.LookPath("man")
	if err != nil {
		t.Skip("man still missing after installing man-db")
	}
	return p
}

// TestManPages writes the pages with sbx man, renders each with man -l and
// groff's warnings on (which go to stderr, with man's exit status 0), and
// checks each has its sections and every flag of its command.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out, errb strings.Builder
	if code := Main([]string{"man", dir}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("sbx man: exit %d: %s", code, errb.String())
	}
	cmds, err := cliCommands()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cliCommand{"sbx.1": {}}
	for _, c := range cmds {
		want["sbx-"+c.Name+".1"] = c
	}
	for _, must := range []string{"sbx-run.1", "sbx-exec.1", "sbx-fs.1", "sbx-version.1", "sbx-completion.1"} {
		if _, ok := want[must]; !ok {
			t.Errorf("no page %s planned", must)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("sbx man wrote %d pages, want %d", len(entries), len(want))
	}
	man := requireMan(t)
	for file, c := range want {
		path := filepath.Join(dir, file)
		cmd := exec.Command(man, "--warnings", "-E", "UTF-8", "-l", path)
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "LC_ALL=C.UTF-8")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("man -l %s: %v\n%s", file, err, stderr.String())
			continue
		}
		if stderr.Len() > 0 {
			t.Errorf("man -l %s warns:\n%s", file, stderr.String())
		}
		text := stdout.String()
		for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "EXAMPLES"} {
			if !strings.Contains(text, "\n"+sec+"\n") {
				t.Errorf("%s: no %s section", file, sec)
			}
		}
		if len(c.Flags) > 0 && !strings.Contains(text, "\nOPTIONS\n") {
			t.Errorf("%s: no OPTIONS section", file)
		}
		// Flags are checked in the source, which man's hyphenation and
		// line filling cannot split.
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.Flags {
			if !strings.Contains(string(src), ".B "+roffText(f.Spelled())+"\n") && !strings.Contains(string(src), ".B "+roffText(f.Spelled())+" ") {
				t.Errorf("%s: flag %s missing", file, f.Spelled())
			}
		}
	}
	run, _ := os.ReadFile(filepath.Join(dir, "sbx-run.1"))
	for _, status := range []string{"125", "126", "127", "128+N"} {
		if !strings.Contains(string(run), ".B "+status+"\n") {
			t.Errorf("sbx-run.1: exit status %s missing", status)
		}
	}
	fsPage, _ := os.ReadFile(filepath.Join(dir, "sbx-fs.1"))
	for _, status := range []string{"0", "1", "3", "125"} {
		if !strings.Contains(string(fsPage), ".B "+status+"\n") {
			t.Errorf("sbx-fs.1: exit status %s missing", status)
		}
	}
}

func TestRoffText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"--mode", `\-\-mode`},
		{`a\b`, `a\eb`},
		{".hidden", `\&.hidden`},
		{"'quoted", `\&'quoted`},
	}
	for _, tt := range tests {
		if got := roffText(tt.in); got != tt.want {
			t.Errorf("roffText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
