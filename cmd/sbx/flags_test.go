package main

import (
	"bytes"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// repeatableFlags may be given more than once; every other flag of every
// subcommand takes one value.
var repeatableFlags = []string{"writable-root", "allow-read", "allow-write", "read-only", "env-allow", "setenv", "require", "cap-add", "protect", "allow-domain", "deny-domain", "resolve", "tool"}

// flagValues are valid values for flags whose value is checked when set.
var flagValues = map[string]string{
	"mode": "read-only", "memory": "64M", "pids": "1", "cpus": "1", "timeout": "1s", "kill-grace": "1s",
	"pty-size": "24x80", "stdin": "pass", "env-mode": "inherit", "setenv": "A=b",
}

// helpFlags lists the flags `sbx SUB --help` prints, and whether each is a
// bool (printed without a value name).
func helpFlags(t *testing.T, sub string) map[string]bool {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{sub, "--help"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("sbx %s --help: exit %d: %s", sub, code, errb.String())
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)( \S+)?$`).FindAllStringSubmatch(errb.String(), -1) {
		flags[m[1]] = m[2] == ""
	}
	return flags
}

// TestFlagGivenTwice: a single-valued flag given twice is refused (125,
// naming it) by every subcommand, before anything runs; the repeatable
// ones are not.
func TestFlagGivenTwice(t *testing.T) {
	subs := []string{"run", "explain", "fs", "doctor"}
	if runtime.GOOS == "linux" {
		subs = append(subs, "probe")
	}
	for _, sub := range subs {
		flags := helpFlags(t, sub)
		if len(flags) == 0 {
			t.Fatalf("sbx %s --help lists no flags", sub)
		}
		for name, isBool := range flags {
			if slices.Contains(repeatableFlags, name) {
				continue // below: Main would run the call
			}
			once := []string{"--" + name}
			if !isBool {
				v, ok := flagValues[name]
				if !ok {
					v = "x"
				}
				once = append(once, v)
			}
			args := append(append(append([]string{sub}, once...), once...), "--", "/nonexistent/sbx-test")
			var out, errb bytes.Buffer
			code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitRefused || !strings.Contains(errb.String(), flagName(name)+" given twice") {
				t.Errorf("%q: exit %d, stderr %q; want 125 and %q", args, code, errb.String(), flagName(name)+" given twice")
			}
		}
	}
	for _, name := range repeatableFlags {
		fs := newFlagSet("run", "", Stdio{Out: io.Discard, Err: io.Discard})
		var rf runFlags
		rf.register(fs.FlagSet)
		v := flagValues[name]
		if v == "" {
			v = "x"
		}
		if _, ok := fs.parse([]string{"--" + name, v, "--" + name, v}); !ok {
			t.Errorf("repeatable --%s refused when given twice", name)
		}
	}
}

// TestFlagHelpUnchanged: the help still shows each flag's type and default
// (the once wrapper is removed after parsing).
func TestFlagHelpUnchanged(t *testing.T) {
	var out, errb bytes.Buffer
	Main([]string{"run", "--help"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	for _, want := range []string{"  -network\n", "  -cpus float\n", `(default "inherit")`, "  -timeout DURATION\n"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("sbx run --help lacks %q", want)
		}
	}
	if strings.Contains(errb.String(), "panic") {
		t.Errorf("sbx run --help: %s", errb.String())
	}
}

// TestExtraArguments: doctor takes none, explain a command only after --,
// and bare sbx is a refusal with the usage on stderr.
func TestExtraArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{nil, ExitRefused, "Usage:"},
		{[]string{"doctor", "extra"}, ExitRefused, `unexpected argument "extra"`},
		{[]string{"explain", "true"}, ExitRefused, `unexpected argument "true"`},
		{[]string{"explain", "--mode", "read-only", "true"}, ExitRefused, `unexpected argument "true"`},
	} {
		var out, errb bytes.Buffer
		code := Main(c.args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("sbx %q: exit %d stderr %q, want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

func TestAfterDashes(t *testing.T) {
	for _, c := range []struct {
		args []string
		n    int
		want bool
	}{
		{[]string{"--", "true"}, 1, true},
		{[]string{"--mode", "read-only", "--", "a", "b"}, 2, true},
		{[]string{"true"}, 1, false},
		{[]string{"--json", "true", "--", "x"}, 3, false},
	} {
		if got := afterDashes(c.args, c.n); got != c.want {
			t.Errorf("afterDashes(%q, %d) = %t, want %t", c.args, c.n, got, c.want)
		}
	}
}
