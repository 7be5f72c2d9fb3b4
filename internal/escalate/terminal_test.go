package escalate

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// fakeTTY reads typed input and records what was printed.
type fakeTTY struct {
	in  io.Reader
	out bytes.Buffer
}

func (f *fakeTTY) Read(p []byte) (int, error)  { return f.in.Read(p) }
func (f *fakeTTY) Write(p []byte) (int, error) { return f.out.Write(p) }

func TestTerminalApprover(t *testing.T) {
	tests := []struct {
		typed string
		want  Outcome
	}{
		{"n\n", Rejected},
		{"\n", Rejected},
		{"", Rejected}, // end of input
		{"yes please\n", Rejected},
		{"allowed-once\n", Rejected},
		{"y\n", AllowedOnce},
		{"Y\n", AllowedOnce},
		{" yes \n", AllowedOnce},
		{"y", AllowedOnce}, // no newline before end of input
	}
	for _, tt := range tests {
		tty := &fakeTTY{in: strings.NewReader(tt.typed)}
		got, err := TerminalApprover{TTY: tty}.Approve(context.Background(), req())
		if err != nil || got != tt.want {
			t.Errorf("typed %q: got %q, %v; want %q", tt.typed, got, err, tt.want)
		}
		if !strings.HasSuffix(tty.out.String(), "allow once? [y/N] ") {
			t.Errorf("prompt %q", tty.out.String())
		}
	}
}

func TestTerminalApproverWithoutTerminal(t *testing.T) {
	a := TerminalApprover{Path: filepath.Join(t.TempDir(), "no-tty")}
	if got, err := a.Approve(context.Background(), req()); err != nil || got != Unavailable {
		t.Fatalf("got %q, %v; want unavailable", got, err)
	}
}

func TestTerminalPromptNeutralisesControlCharacters(t *testing.T) {
	r := ApprovalRequest{
		CallID: "c1", Tool: "shell", Cwd: repo,
		AdditionalPermissions: &profiles.Profile{Network: &profiles.Network{Enabled: true}, FileSystem: &profiles.FileSystem{Write: []string{"/x\x1b[2K"}}},
		Justification:         "ok\r\x1b[1Aallow once? [y/N] y\n\u202e",
	}
	got := prompt(r)
	if strings.ContainsAny(got, "\x1b\r\u202e") {
		t.Fatalf("prompt carries control characters: %q", got)
	}
	for _, want := range []string{"network: enabled", "write: /x?[2K", "justification: ok??[1Aallow once? [y/N] y??"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt %q lacks %q", got, want)
		}
	}
}

// The terminal is shown the one question's command, when there is one,
// each argument quoted and cleaned.
func TestTerminalPromptShowsCommand(t *testing.T) {
	r := ApprovalRequest{CallID: "c1", Tool: "shell", Cwd: repo, Command: []string{"touch", "a b\x1b[2K"},
		AdditionalPermissions: &profiles.Profile{Network: &profiles.Network{Enabled: true}}}
	if got := prompt(r); !strings.Contains(got, `  command: "touch" "a b?[2K"`+"\n") || strings.Contains(got, "\x1b") {
		t.Errorf("prompt %q: want the command, quoted and cleaned", got)
	}
	r.Command = nil
	if got := prompt(r); strings.Contains(got, "command:") {
		t.Errorf("prompt %q: no command to show", got)
	}
}
