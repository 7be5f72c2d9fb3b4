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
		{"unknown", []string{"--answerers", "client,editor"}, `--answerers: unknown answerer "editor"`},
		{"web without --web", []string{"--answerers", "client,web"}, "--answerers: web needs --web 127.0.0.1:PORT"},
		{"--web not listed", []string{"--answerers", "client", "--web", "127.0.0.1:0"}, "--answerers: --web is given but web is not in the list"},
		{"--web on every address", []string{"--web", "0.0.0.0:8080"}, "--web: \"0.0.0.0:8080\": the panel binds loopback only"},
		{"--web on a LAN address", []string{"--web", "192.168.1.2:8080"}, "--web: \"192.168.1.2:8080\": the panel binds loopback only"},
		{"--web on another loopback address", []string{"--web", "127.0.0.2:8080"}, "--web: \"127.0.0.2:8080\": the panel binds loopback only"},
		{"--web on a mapped address", []string{"--web", "[::ffff:127.0.0.1]:8080"}, "the panel binds loopback only"},
		{"--web by name", []string{"--web", "localhost:8080"}, "--web: \"localhost:8080\": want 127.0.0.1:PORT or [::1]:PORT"},
		{"--web without port", []string{"--web", "127.0.0.1"}, "--web: \"127.0.0.1\": want 127.0.0.1:PORT"},
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
// then the browser panel with --web, then the approver program where the
// terminal would be.
func TestServeDefaultAnswerers(t *testing.T) {
	for _, tt := range []struct {
		approver, web, terminal, acp bool
		want                         []string
	}{
		{false, false, false, false, []string{"client"}},
		{false, false, true, false, []string{"client", "terminal"}},
		{true, false, false, false, []string{"client", "approver"}},
		{true, false, true, false, []string{"client", "approver"}},
		{false, true, false, false, []string{"client", "web"}},
		{false, true, true, false, []string{"client", "web", "terminal"}},
		{true, true, false, false, []string{"client", "web", "approver"}},
		{false, false, false, true, []string{"acp", "client"}},
		{true, false, false, true, []string{"acp", "client", "approver"}},
		{false, false, true, true, []string{"acp", "client", "terminal"}},
		{true, true, false, true, []string{"acp", "client", "web", "approver"}},
	} {
		if got := defaultAnswerers(tt.approver, tt.web, tt.terminal, tt.acp); !slices.Equal(got, tt.want) {
			t.Errorf("approver %v web %v terminal %v acp %v: %v, want %v", tt.approver, tt.web, tt.terminal, tt.acp, got, tt.want)
		}
	}
	client, web, w, err := buildWaterfall([]string{"terminal", "client", "approver"}, "/bin/approve --x", false, nil)
	if err != nil || client == nil || web != nil || len(w) != 3 || w[1] != client {
		t.Errorf("waterfall %v %v %v", client, w, err)
	}
	if client, web, w, err := buildWaterfall([]string{"terminal"}, "", false, nil); err != nil || client != nil || web != nil || len(w) != 1 {
		t.Errorf("terminal alone: %v %v %v", client, w, err)
	}
	if client, web, w, err := buildWaterfall([]string{"web", "client"}, "", true, nil); err != nil || client == nil || web == nil || len(w) != 2 || w[0] != web {
		t.Errorf("web, client: %v %v %v %v", client, web, w, err)
	}
	if client, web, w, err := buildWaterfall([]string{"web"}, "", true, nil); err != nil || client != nil || web == nil || len(w) != 1 {
		t.Errorf("web alone (no client is asked): %v %v %v %v", client, web, w, err)
	}
}
