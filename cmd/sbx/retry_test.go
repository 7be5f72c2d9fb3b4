package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

func runFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var rf runFlags
	rf.register(fs)
	fs.String("report", "", "")
	fs.Bool("explain-denials", false, "")
	return fs
}

func TestRunRetryArgv(t *testing.T) {
	with, esc := profiles.WithAdditionalPermissions, profiles.RequireEscalated
	dfa := profiles.DangerFullAccess
	empty := ""
	writeOut := profiles.New(nil, nil, []string{"/out"})
	netOnly := profiles.New(profiles.FullNetwork(), nil, nil)
	tests := []struct {
		name string
		args string
		r    escalate.Retry
		orig profiles.Profile
		want string
	}{
		{"plain", "--mode workspace-write -- sh -c 'x'",
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &writeOut, Justification: &empty}, profiles.Profile{},
			"sbx run --mode workspace-write --sandbox-permissions with_additional_permissions --allow-write /out --justification '' -- sh -c x"},
		{"flag=value forms and bool flags kept", "-mode=workspace-write --exclude-tmp --report r.json --cwd /w true",
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &writeOut, Justification: &empty}, profiles.Profile{},
			"sbx run -mode=workspace-write --exclude-tmp --report r.json --cwd /w --sandbox-permissions with_additional_permissions --allow-write /out --justification '' -- true"},
		{"an earlier escalation is replaced, its paths kept", "--sandbox-permissions with_additional_permissions --allow-write /a --justification old -- true",
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: ptr(profiles.New(nil, nil, []string{"/a", "/out"})), Justification: &empty},
			profiles.New(nil, nil, []string{"/a"}),
			"sbx run --allow-write /a --sandbox-permissions with_additional_permissions --allow-write /out --justification '' -- true"},
		{"network only adds --network and keeps the rest", "--allow-write /a --sandbox-permissions with_additional_permissions --justification j -- true",
			escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &netOnly, Justification: &empty}, profiles.New(nil, nil, []string{"/a"}),
			"sbx run --allow-write /a --sandbox-permissions with_additional_permissions --justification j --network -- true"},
		{"escalation drops additional permissions", "--mode workspace-write --allow-write /a --network -- true",
			escalate.Retry{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty}, profiles.New(nil, nil, []string{"/a"}),
			"sbx run --mode workspace-write --network --escalate danger-full-access --justification '' -- true"},
		{"escalation replaces an earlier --escalate", "--mode read-only --escalate workspace-write --justification j -- true",
			escalate.Retry{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty}, profiles.Profile{},
			"sbx run --mode read-only --escalate danger-full-access --justification '' -- true"},
		{"nothing to ask", "-- true", escalate.Retry{}, profiles.Profile{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runFlagSet()
			args := splitShell(tt.args)
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if got := shellJoin(retryCommandLine("run", fs, args).Argv(tt.r, tt.orig)); got != tt.want && !(tt.want == "" && got == "") {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"sbx", "--justification", "", "--", "sh", "-c", "echo it's > /x", "a=b", "/p/q.txt"})
	want := `sbx --justification '' -- sh -c 'echo it'\''s > /x' a=b /p/q.txt`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !slices.Equal(splitShell(want), []string{"sbx", "--justification", "", "--", "sh", "-c", "echo it's > /x", "a=b", "/p/q.txt"}) {
		t.Errorf("splitShell does not invert shellJoin: %q", splitShell(want))
	}
}

// splitShell splits the single-quoted shell words shellJoin writes.
func splitShell(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// The retry's flag spelling (the request table's) names flags of the run
// flag set, and the value flags are exactly those that are not bool flags.
func TestRetryCommandLineSpelling(t *testing.T) {
	fs := runFlagSet()
	for _, key := range []string{"network_access", "sandbox_permissions", "escalate_to", "justification",
		"additional_permissions.file_system.read", "additional_permissions.file_system.write"} {
		if f, _ := call.FieldByKey(key); fs.Lookup(f.Flag) == nil {
			t.Errorf("--%s (%s) is not a run flag", f.Flag, key)
		}
	}
	cl := retryCommandLine("run", fs, nil)
	if cl.ValueFlags["network"] || cl.ValueFlags["exclude-tmp"] || !cl.ValueFlags["mode"] || !cl.ValueFlags["allow-write"] {
		t.Errorf("value flags %v", cl.ValueFlags)
	}
}
