package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseDefaultsEntry(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want cliFlag
		ok   bool
	}{
		{"bool", "  -network\n    \tallow network access\n", cliFlag{Name: "network", Usage: "allow network access"}, true},
		{"value", "  -mode value\n    \tsandbox mode (default read-only)\n", cliFlag{Name: "mode", Arg: "value", Usage: "sandbox mode (default read-only)"}, true},
		{"one-letter bool", "  -r\trecursive\n", cliFlag{Name: "r", Usage: "recursive"}, true},
		{"one-letter value", "  -c string\n    \tthe script\n", cliFlag{Name: "c", Arg: "string", Usage: "the script"}, true},
		{"multi-line usage", "  -x N\n    \tfirst\n    \tsecond\n", cliFlag{Name: "x", Arg: "N", Usage: "first\nsecond"}, true},
		{"help text", "Usage: sbx run [flags]\n\nRuns COMMAND.\n", cliFlag{}, false},
		{"indented help text", "  sbx presets [--json]\n", cliFlag{}, false},
	}
	for _, tt := range tests {
		got, ok, err := parseDefaultsEntry(tt.in)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("%s: parseDefaultsEntry(%q) = %+v, %v, %v; want %+v, %v", tt.name, tt.in, got, ok, err, tt.want, tt.ok)
		}
	}
}

// TestCLISpecMatchesFlagSets checks the spec read from the help against the
// flag definitions themselves, for the flags run, explain, fs and probe
// share: every flag, its argument kind and its help, nothing more.
func TestCLISpecMatchesFlagSets(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var rf runFlags
	rf.register(fs)
	cmds, err := cliCommands()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cliCommand{}
	for _, c := range cmds {
		byName[c.Name] = c
	}
	for _, name := range []string{"run", "explain", "fs", "probe"} {
		c, ok := byName[name]
		if !ok {
			if name == "probe" {
				continue // Linux only
			}
			t.Fatalf("no %s in the spec", name)
		}
		got := map[string]cliFlag{}
		for _, f := range c.Flags {
			got[f.Name] = f
		}
		fs.VisitAll(func(f *flag.Flag) {
			g, ok := got[f.Name]
			if !ok {
				t.Errorf("%s: flag %s missing from the spec", name, f.Name)
				return
			}
			arg, usage := flag.UnquoteUsage(f)
			if g.Arg != arg || !strings.HasPrefix(g.Usage, usage) {
				t.Errorf("%s --%s: spec %+v, flag set arg %q usage %q", name, f.Name, g, arg, usage)
			}
		})
	}
	if d := byName["presets"].Subcommands; len(d) != 1 || d[0].Name != "presets derive" || len(d[0].Flags) != 3 {
		t.Errorf("presets subcommands = %+v, want derive with --mode, --approval-policy, --last", d)
	}
	for _, c := range cmds {
		if c.Summary == "" || !strings.HasPrefix(c.Usage, "Usage:") {
			t.Errorf("%s: summary %q, usage %q", c.Name, c.Summary, c.Usage)
		}
	}
	if !slices.ContainsFunc(cmds, func(c cliCommand) bool { return c.Name == "version" }) {
		t.Error("version is not in the spec")
	}
	if slices.ContainsFunc(cmds, func(c cliCommand) bool {
		return strings.HasPrefix(c.Name, "_") || strings.HasPrefix(c.Name, "-") || c.Name == "man"
	}) {
		t.Error("a hidden command is in the spec")
	}
}

// TestFlagValuesAreAccepted runs every completed value through the flag that
// parses it: a value completion offers must not be refused.
func TestFlagValuesAreAccepted(t *testing.T) {
	for _, name := range []string{"mode", "escalate", "preset", "require", "shell", "env-mode", "stdin", "approval-policy", "sandbox-permissions"} {
		vs := completionValues(name)
		if len(vs) == 0 {
			t.Errorf("--%s: no values", name)
		}
		for _, v := range vs {
			args := []string{"--" + name, v}
			switch name {
			case "escalate":
				args = append(args, "--justification", "j")
			case "shell":
				args = append(args, "-c", "true")
			}
			// explain compiles the call and runs nothing; stdin is run's.
			cmd := "explain"
			if name == "stdin" {
				if v != "pass" && v != "close" {
					t.Errorf("--stdin %s: not a value runTerminalFlags takes", v)
				}
				continue
			}
			var out, errb strings.Builder
			code := Main(append([]string{cmd}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
			if strings.Contains(errb.String(), "--"+name+":") || strings.Contains(errb.String(), "invalid value") {
				t.Errorf("sbx %s %v: exit %d, %s", cmd, args, code, errb.String())
			}
		}
	}
}
