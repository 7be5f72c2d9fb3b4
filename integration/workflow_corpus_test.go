//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The workflows of the corpus (issue 29; the harness is workflow_test.go).

// toolCandidates are the places tried before PATH: Debian's cargo and
// python3 (what .ci/run installs, runnable by every user) before rustup's
// and pyenv's under /root, which another user cannot run and which need
// their own HOME.
var toolCandidates = map[string][]string{
	"cargo":   {"/usr/bin/cargo"},
	"python3": {"/usr/bin/python3"},
	"node":    {"/usr/bin/node"},
}

// toolPath is a PATH of the tools' directories, then the system's.
func toolPath(bin map[string]string, names ...string) string {
	p := ""
	for _, n := range names {
		p += filepath.Dir(bin[n]) + ":"
	}
	return "PATH=" + p + "/usr/bin:/bin"
}

// gitEnv makes git's output the same on every run: fixed identities and
// dates (so the same commit hashes), and the workspace trusted whoever
// owns it (safe.directory, from the environment's command-line scope).
var gitEnv = []string{"GIT_AUTHOR_NAME=sbx", "GIT_AUTHOR_EMAIL=sbx@example.com", "GIT_COMMITTER_NAME=sbx",
	"GIT_COMMITTER_EMAIL=sbx@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*", "GIT_CONFIG_NOSYSTEM=1"}

// goTimings are the parts of go test's output that differ between runs.
var goTimings = regexp.MustCompile(`\t(\d+\.\d+s|\(cached\))`)

var corpus = []workflow{
	{name: "git", tools: []string{"git"}, relocate: "XDG_CONFIG_HOME", git: true,
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "a.txt"), "one\n")
			for _, args := range [][]string{{"init", "-q", "-b", "main", "."}, {"add", "a.txt"}, {"commit", "-q", "-m", "first"}} {
				cmd := exec.Command(bin["git"], args...)
				cmd.Dir, cmd.Env = ws, bareEnv(append([]string{"HOME=" + ws}, gitEnv...))
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %q: %v\n%s", args, err, b)
				}
			}
			writeFile(t, filepath.Join(ws, "a.txt"), "one\ntwo\n")
			writeFile(t, filepath.Join(ws, "b.txt"), "new\n")
		},
		steps: func(bin map[string]string) [][]string {
			git := bin["git"]
			return [][]string{{git, "status", "--short"}, {git, "diff"}, {git, "log", "--oneline"},
				{git, "add", "a.txt", "b.txt"}, {git, "commit", "-q", "-m", "second"}, {git, "log", "--oneline"}, {git, "status", "--short"}}
		},
		env: func(bin map[string]string) []string { return append([]string{toolPath(bin, "git")}, gitEnv...) }},

	// A module that is not a repository, with Go's default settings
	// (-buildvcs=auto, telemetry, the toolchain and proxy defaults): its
	// go line is below the local toolchain, and it has no dependencies, so
	// nothing is downloaded.
	{name: "go", tools: []string{"go"}, relocate: "GOCACHE", heavy: true,
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/hello\n\ngo 1.21\n")
			writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n")
			writeFile(t, filepath.Join(ws, "main_test.go"), "package main\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {}\n")
		},
		steps: func(bin map[string]string) [][]string {
			// The build as a runtime sends it, a shell's script (the
			// retry reads which tool it runs); the test as an argv.
			return [][]string{{"sh", "-c", "go build -o hello . && ./hello"}, {bin["go"], "test", "."}}
		},
		env: func(bin map[string]string) []string { return []string{toolPath(bin, "go")} },
		// The bare run builds with the user's own build cache (warm from
		// building sbx): the sandboxed runs start empty, and each of them
		// compiles the standard library anyway.
		bareEnv: func(bin map[string]string) []string {
			b, err := exec.Command(bin["go"], "env", "GOCACHE").Output()
			if c := strings.TrimSpace(string(b)); err == nil && filepath.IsAbs(c) {
				return []string{"GOCACHE=" + c}
			}
			return nil
		},
		norm: func(s string) string { return goTimings.ReplaceAllString(s, "\tTIME") }},

	// A crate without dependencies, offline: nothing to fetch.
	{name: "cargo", tools: []string{"cargo"}, relocate: "CARGO_HOME",
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2018\"\n")
			if err := os.Mkdir(filepath.Join(ws, "src"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(ws, "src", "main.rs"), "fn main() {\n    println!(\"hello from cargo\");\n}\n")
		},
		steps: func(bin map[string]string) [][]string {
			return [][]string{{bin["cargo"], "build", "-q"}, {"./target/debug/hello"}}
		},
		env: func(bin map[string]string) []string {
			return []string{toolPath(bin, "cargo"), "CARGO_NET_OFFLINE=true", "CARGO_TERM_COLOR=never"}
		}},

	{name: "make", tools: []string{"make", "gcc"}, relocate: "XDG_CACHE_HOME",
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "Makefile"), "CC = gcc\n\nhello: hello.c\n\t$(CC) -O0 -o $@ $<\n")
			writeFile(t, filepath.Join(ws, "hello.c"), "#include <stdio.h>\n\nint main(void) { puts(\"hello from make\"); return 0; }\n")
		},
		steps: func(bin map[string]string) [][]string { return [][]string{{bin["make"]}, {"./hello"}} },
		env:   func(bin map[string]string) []string { return []string{toolPath(bin, "make", "gcc")} }},

	// A script importing a module of its own (which writes __pycache__, in
	// the workspace, or under PYTHONPYCACHEPREFIX when relocated).
	{name: "python", tools: []string{"python3"}, relocate: "PYTHONPYCACHEPREFIX",
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "helper.py"), "def greet():\n    return 'hello from python'\n")
			writeFile(t, filepath.Join(ws, "script.py"), "import helper\nprint(helper.greet())\n")
		},
		steps: func(bin map[string]string) [][]string { return [][]string{{bin["python3"], "script.py"}} },
		env:   func(bin map[string]string) []string { return []string{toolPath(bin, "python3")} }},

	// A script requiring a module of its own; NODE_COMPILE_CACHE is the
	// compile cache of Node 22.1+ (older ones ignore it).
	{name: "node", tools: []string{"node"}, relocate: "NODE_COMPILE_CACHE",
		setup: func(t *testing.T, ws string, bin map[string]string) {
			writeFile(t, filepath.Join(ws, "lib.js"), "exports.greet = () => 'hello from node';\n")
			writeFile(t, filepath.Join(ws, "script.js"), "console.log(require('./lib.js').greet());\n")
		},
		steps: func(bin map[string]string) [][]string { return [][]string{{bin["node"], "script.js"}} },
		env:   func(bin map[string]string) []string { return []string{toolPath(bin, "node")} }},
}
