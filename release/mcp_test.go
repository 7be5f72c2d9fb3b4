package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkPairs wants sbx and sbx-mcp (the program sbx mcp runs from beside
// sbx) as 0755 files in every archive, the .exe pair in the zips.
func checkPairs(t *testing.T, dist string) {
	t.Helper()
	for _, target := range []string{"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64", "windows-amd64", "windows-arm64"} {
		name := "sbx-" + testVersion + "-" + target
		modes := map[string]os.FileMode{}
		ext := ""
		if strings.HasPrefix(target, "windows-") {
			ext = ".exe"
			zr, err := zip.OpenReader(filepath.Join(dist, name+".zip"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				modes[f.Name] = f.Mode().Perm()
			}
			zr.Close()
		} else {
			f, err := os.Open(filepath.Join(dist, name+".tar.gz"))
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(zr)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				modes[h.Name] = os.FileMode(h.Mode).Perm()
			}
			f.Close()
		}
		for _, b := range []string{"sbx", "sbx-mcp"} {
			m, ok := modes[name+"/"+b+ext]
			if !ok {
				t.Errorf("%s lacks %s", name, b+ext)
			} else if m != 0o755 {
				t.Errorf("%s: %s has mode %v, want 0755", name, b+ext, m)
			}
		}
	}
}

// checkMCPStamp wants sbx-mcp built as sbx is: static (no ELF interpreter),
// without cgo, -trimpath, no VCS stamp (go version -m reads the build
// settings the binary records; -trimpath keeps -ldflags out of them, and
// sbx-mcp links no version package: the version it serves is sbx's, which
// checkMCP checks).
func checkMCPStamp(t *testing.T, sbxMCP string) {
	t.Helper()
	f, err := elf.Open(sbxMCP)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", sbxMCP)
		}
	}
	f.Close()
	out, err := exec.Command("go", "version", "-m", sbxMCP).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", sbxMCP, err, out)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath=true"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("sbx-mcp's build settings lack %s:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("vcs.")) {
		t.Errorf("sbx-mcp has a VCS stamp (want -buildvcs=false):\n%s", out)
	}
}

// checkMCP runs the shipped pair: sbx mcp on stdio, found sbx-mcp beside
// itself (a decoy sbx-mcp first on PATH that fails would show otherwise),
// and a client's session through it: initialize, the tool list, an
// allowed shell call, and a denied one with its structured denial.
func checkMCP(t *testing.T, sbx string) {
	t.Helper()
	decoy := t.TempDir()
	if err := os.WriteFile(filepath.Join(decoy, "sbx-mcp"), []byte("#!/bin/sh\necho decoy sbx-mcp from PATH >&2\nexit 97\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sbx, "mcp", "--ephemeral", "--cwd", cwd, "--mode", "read-only", "--approval-policy", "never")
	cmd.Env = append(os.Environ(), "PATH="+decoy+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatalf("sbx mcp: write: %v\n%s", err, stderr.Bytes())
		}
	}
	// call sends a request and returns its result, skipping the server's
	// notifications.
	call := func(id int, method, params string) map[string]any {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		for lines.Scan() {
			var msg struct {
				ID     *int           `json:"id"`
				Method string         `json:"method"`
				Result map[string]any `json:"result"`
				Error  any            `json:"error"`
			}
			if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
				t.Fatalf("sbx mcp: %v: %s", err, lines.Bytes())
			}
			if msg.ID == nil || *msg.ID != id || msg.Method != "" {
				continue
			}
			if msg.Error != nil || msg.Result == nil {
				t.Fatalf("sbx mcp: %s: %s", method, lines.Bytes())
			}
			return msg.Result
		}
		t.Fatalf("sbx mcp: %s: no answer (%v)\n%s", method, lines.Err(), stderr.Bytes())
		return nil
	}
	hello := call(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"release-test","version":"0"}}`)
	if info, _ := hello["serverInfo"].(map[string]any); info["name"] != "sbx" || info["version"] != testVersion {
		t.Errorf("sbx mcp: serverInfo %v, want sbx %s", hello["serverInfo"], testVersion)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tools, _ := call(2, "tools/list", `{}`)["tools"].([]any)
	var names []string
	for _, tool := range tools {
		if m, ok := tool.(map[string]any); ok {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	if !contains(names, "shell") || !contains(names, "apply_patch") || !contains(names, "fs_write") {
		t.Errorf("sbx mcp: tools %v, want shell, apply_patch, fs_write among them", names)
	}
	allowed := call(3, "tools/call", `{"name":"shell","arguments":{"command":["echo","hello"]}}`)
	if sc, _ := allowed["structuredContent"].(map[string]any); allowed["isError"] == true || sc["stdout"] != "hello\n" || sc["exit_code"] != float64(0) {
		t.Errorf("sbx mcp: allowed call: %v\n%s", allowed, stderr.Bytes())
	}
	file := filepath.Join(cwd, "denied")
	denied := call(4, "tools/call", fmt.Sprintf(`{"name":"shell","arguments":{"command":["touch",%q]}}`, file))
	sc, _ := denied["structuredContent"].(map[string]any)
	if ds, _ := sc["denials"].([]any); denied["isError"] != true || sc["denied"] != true || len(ds) == 0 {
		t.Errorf("sbx mcp: denied call: %v", denied)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("sbx mcp: the denied call made %s", file)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("sbx mcp after its client closed stdin: %v\n%s", err, stderr.Bytes())
	}
}
