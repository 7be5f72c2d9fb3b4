package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestServeAnswerersRefused: a bad waterfall is refused (125, naming
// --answerers or the flag at fault) before anything is served.
func TestServeAnswerersRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown", []string{"--answerers", "client,web"}, `--answerers: unknown answerer "web"`},
		{"empty entry", []string{"--answerers", "client,"}, `--answerers: unknown answerer ""`},
		{"duplicate", []string{"--answerers", "client,terminal,client"}, `--answerers: "client" is named twice`},
		{"approver without --approver", []string{"--answerers", "client,approver"}, "--answerers: approver needs --approver CMD"},
		{"--approver not listed", []string{"--answerers", "client", "--approver", "/bin/true"}, "--answerers: --approver CMD is given but approver is not in the list"},
		{"with --approve-on-terminal", []string{"--answerers", "client", "--approve-on-terminal"}, "--answerers and --approve-on-terminal"},
		{"zero timeout", []string{"--answer-timeout", "0"}, "--answer-timeout: must be more than 0"},
		{"negative timeout", []string{"--answer-timeout", "-1s"}, "--answer-timeout: must be more than 0"},
		{"acp without a connection", []string{"--answerers", "acp,client"}, "--answerers: acp needs --acp-socket PATH or --acp-fd N"},
		{"--acp-socket not listed", []string{"--answerers", "client", "--acp-socket", "/nonexistent/acp.sock"}, "--answerers: --acp-socket or --acp-fd is given but acp is not in the list"},
		{"--acp-fd not listed", []string{"--answerers", "client", "--acp-fd", "3"}, "--answerers: --acp-socket or --acp-fd is given but acp is not in the list"},
		{"both acp flags", []string{"--acp-socket", "/x.sock", "--acp-fd", "3"}, "--acp-socket and --acp-fd: give one or the other"},
		{"no acp socket", []string{"--acp-socket", "/nonexistent/acp.sock"}, "--acp-socket: connect /nonexistent/acp.sock:"},
		{"acp-fd not a number", []string{"--acp-fd", "x"}, `--acp-fd: "x" is not a file descriptor number`},
		{"acp-fd negative", []string{"--acp-fd", "-1"}, "--acp-fd: fd -1: not a file descriptor"},
		{"acp-fd stderr", []string{"--acp-fd", "2"}, "--acp-fd: fd 2: stdin, stdout and stderr are not an ACP connection"},
		{"acp-fd closed", []string{"--acp-fd", "987"}, "--acp-fd: fd 987: bad file descriptor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(append([]string{"serve", "--ephemeral"}, tt.args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitRefused || !strings.Contains(errb.String(), tt.want) || out.Len() != 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want 125 and %q", code, errb.String(), out.String(), tt.want)
			}
		})
	}
}

// TestServeDefaultAnswerers: without --answerers the client comes first,
// then the approver program where the terminal would be.
func TestServeDefaultAnswerers(t *testing.T) {
	for _, tt := range []struct {
		approver, terminal, acp bool
		want                    []string
	}{
		{false, false, false, []string{"client"}},
		{false, true, false, []string{"client", "terminal"}},
		{true, false, false, []string{"client", "approver"}},
		{true, true, false, []string{"client", "approver"}},
		{false, false, true, []string{"acp", "client"}},
		{true, false, true, []string{"acp", "client", "approver"}},
		{false, true, true, []string{"acp", "client", "terminal"}},
	} {
		if got := defaultAnswerers(tt.approver, tt.terminal, tt.acp); !slices.Equal(got, tt.want) {
			t.Errorf("approver %v terminal %v acp %v: %v, want %v", tt.approver, tt.terminal, tt.acp, got, tt.want)
		}
	}
	client, w, err := buildWaterfall([]string{"terminal", "client", "approver"}, "/bin/approve --x", nil)
	if err != nil || client == nil || len(w) != 3 || w[1] != client {
		t.Errorf("waterfall %v %v %v", client, w, err)
	}
	if client, w, err := buildWaterfall([]string{"terminal"}, "", nil); err != nil || client != nil || len(w) != 1 {
		t.Errorf("terminal alone: %v %v %v", client, w, err)
	}
}
