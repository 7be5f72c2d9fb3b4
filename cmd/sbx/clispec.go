package main

// This file describes the CLI as data for the man pages and the completion
// scripts. It asks each subcommand for its help (`sbx CMD -h`), the text the
// flag package prints from the very flag definitions the subcommand parses,
// so that nothing about a flag is written down twice: a flag added to a
// subcommand shows up in its man page and completions with no other change.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
)

// cliCommand is one subcommand as its help describes it.
type cliCommand struct {
	// Name is the words after "sbx": "run", "presets derive".
	Name    string
	Summary string
	// Usage is the help text before the flags (Usage: line, description,
	// examples).
	Usage string
	Flags []cliFlag
	// Subcommands are the words that select a sub-subcommand (presets derive).
	Subcommands []cliCommand
	// Args are the words the first positional argument takes (fs's
	// operations, completion's shells), for completion.
	Args []string
}

// cliFlag is one flag as PrintDefaults describes it.
type cliFlag struct {
	// Name is without dashes: "mode", "c".
	Name string
	// Arg is the value's placeholder ("string", "FILE", "value"); empty for
	// a flag that takes none (a bool flag).
	Arg string
	// Usage is the flag's help, with the "(default ...)" PrintDefaults adds.
	Usage string
}

// Spelled is the flag as the help and errors spell it: -c, --mode.
func (f cliFlag) Spelled() string { return flagName(f.Name) }

// Repeatable says whether the help calls the flag repeatable (listFlag's
// help says so; the flag package does not record it otherwise).
func (f cliFlag) Repeatable() bool { return strings.Contains(f.Usage, "repeatable") }

// subcommandWords are the sub-subcommands that have help of their own.
var subcommandWords = map[string][]string{"presets": {"derive"}, "log": {"show", "verify"}}

// positionalWords are the words a subcommand's first argument takes.
func positionalWords(name string) []string {
	switch name {
	case "fs":
		var ops []string
		for _, k := range fsop.Kinds {
			ops = append(ops, string(k))
		}
		return ops
	case "completion":
		return completionShells
	}
	return nil
}

// completionValues are the values a flag takes, for completion, from the code that
// parses them; nil for a flag whose values are not a fixed set.
func completionValues(name string) []string {
	var vs []string
	switch name {
	case "mode", "escalate":
		for _, m := range profiles.Modes() {
			vs = append(vs, m.String())
		}
	case "preset":
		for _, p := range profiles.Builtin().List() {
			vs = append(vs, p.Key)
		}
	case "require":
		vs = append(vs, report.FeatureNames()...)
	case "shell":
		for _, k := range shells.Kinds {
			vs = append(vs, string(k))
		}
	case "env-mode":
		vs = []string{string(profiles.EnvInherit), string(profiles.EnvClean), string(profiles.EnvAllowList)}
	case "stdin":
		// runTerminalFlags accepts these two.
		vs = []string{"pass", "close"}
	case "approval-policy":
		for _, p := range profiles.ApprovalPolicies() {
			vs = append(vs, p.String())
		}
	case "sandbox-permissions":
		for s := profiles.UseDefault; s <= profiles.RequireEscalated; s++ {
			vs = append(vs, s.String())
		}
	}
	return vs
}

// valueKind is what a flag's value names, when it is not a fixed set.
type valueKind int

const (
	valueOther valueKind = iota
	valueFile
	valueDir
	valueCommand
)

func flagValueKind(name string) valueKind {
	switch name {
	case "cwd", "writable-root":
		return valueDir
	case "allow-read", "allow-write", "read-only", "report", "guard", "grants":
		return valueFile
	case "approver":
		return valueCommand
	}
	return valueOther
}

// cliCommands returns every visible subcommand, sorted by name.
func cliCommands() ([]cliCommand, error) {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []cliCommand
	for _, n := range names {
		c, err := describeCommand([]string{n}, commands[n].summary)
		if err != nil {
			return nil, err
		}
		for _, sub := range subcommandWords[n] {
			s, err := describeCommand([]string{n, sub}, "")
			if err != nil {
				return nil, err
			}
			c.Subcommands = append(c.Subcommands, s)
		}
		c.Args = positionalWords(n)
		out = append(out, c)
	}
	return out, nil
}

// describeCommand runs `sbx WORDS... -h` and reads its help.
func describeCommand(words []string, summary string) (cliCommand, error) {
	name := strings.Join(words, " ")
	var log writeLog
	args := append(append([]string{}, words[1:]...), "-h")
	code := commands[words[0]].run(args, Stdio{In: strings.NewReader(""), Out: io.Discard, Err: &log})
	if code != 0 {
		return cliCommand{}, fmt.Errorf("sbx %s -h: exit %d: %s", name, code, bytes.Join(log.writes, nil))
	}
	c := cliCommand{Name: name, Summary: summary}
	var usage strings.Builder
	for _, w := range log.writes {
		f, ok, err := parseDefaultsEntry(string(w))
		if err != nil {
			return cliCommand{}, fmt.Errorf("sbx %s -h: %w", name, err)
		}
		if ok {
			c.Flags = append(c.Flags, f)
			continue
		}
		if len(c.Flags) > 0 {
			return cliCommand{}, fmt.Errorf("sbx %s -h: text after the flags: %q", name, w)
		}
		usage.Write(w)
	}
	c.Usage = usage.String()
	if !strings.HasPrefix(c.Usage, "Usage:") {
		return cliCommand{}, fmt.Errorf("sbx %s -h: help does not start with Usage: %q", name, c.Usage)
	}
	return c, nil
}

// writeLog keeps each Write apart: PrintDefaults writes each flag with one
// call, and the help text before it comes in writes of its own.
type writeLog struct{ writes [][]byte }

func (l *writeLog) Write(p []byte) (int, error) {
	l.writes = append(l.writes, append([]byte(nil), p...))
	return len(p), nil
}

// parseDefaultsEntry reads one flag as flag.PrintDefaults writes it:
// "  -name ARG\n    \tusage\n    \tmore usage\n", or "  -x\tusage\n" for a
// one-letter flag without a value. ok is false for a write that is not one.
func parseDefaultsEntry(s string) (f cliFlag, ok bool, err error) {
	if !strings.HasPrefix(s, "  -") || !strings.HasSuffix(s, "\n") {
		return cliFlag{}, false, nil
	}
	lines := strings.Split(strings.TrimSuffix(s[3:], "\n"), "\n")
	head, usage, short := strings.Cut(lines[0], "\t")
	if short && len(head) != 1 {
		return cliFlag{}, false, nil
	}
	if !short {
		var rest []string
		for _, l := range lines[1:] {
			t, found := strings.CutPrefix(l, "    \t")
			if !found {
				return cliFlag{}, false, errors.New("flag help line without PrintDefaults' indent: " + strconvQuote(l))
			}
			rest = append(rest, t)
		}
		usage = strings.Join(rest, "\n")
	}
	name, arg, _ := strings.Cut(head, " ")
	if name == "" || strings.ContainsAny(name, " \t") {
		return cliFlag{}, false, nil
	}
	return cliFlag{Name: name, Arg: arg, Usage: usage}, true, nil
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }
