//go:build linux

package integration

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestServeQuestionCreatesGoCache: through sbx serve, go build with a
// GOCACHE that does not exist is refused; its retry asked as the call's
// additional permissions reaches the client as approval/requested whose
// "create" names GOCACHE (and only tool directories), before anything is
// made; allowed once, sbx makes it, says so (permissions.created) and the
// build succeeds (issue 29).
func TestServeQuestionCreatesGoCache(t *testing.T) {
	requireWriteRestriction(t)
	if !caps(t).supervised {
		Require(t, "denial-reports")
	}
	goBin, ws, out, gocache, env := goModule(t)
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	s := startServer(t, "--answerers", "client")
	s.ok("initialize", approvalsInit)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	build := func(callID string) map[string]any {
		p := execParams("s", turn, callID, ws, goBin, "build", "-o", "hello", ".")
		p["env"] = vars
		return p
	}
	res := s.ok("exec", build("c1"))
	if res["exit_code"] == float64(0) {
		t.Fatalf("go build with a GOCACHE it cannot make succeeded: %v", res)
	}
	grant, writes := grantWrites(t, res)
	if !slices.Contains(writes, gocache) {
		t.Fatalf("retry grants %q, want %s", writes, gocache)
	}

	p := build("c2")
	p["sandbox_permissions"], p["justification"], p["additional_permissions"] = "with_additional_permissions", "build", grant
	pending := s.start("exec", p)
	req := nextNote(t, s.notes, "approval/requested")
	q := req["params"].(map[string]any)
	create, _ := q["create"].([]any)
	if !slices.Contains(create, any(gocache)) {
		t.Fatalf("approval/requested create %v, want %s: %v", q["create"], gocache, q)
	}
	telemetry := filepath.Join(out, "config", "go", "telemetry")
	for _, c := range create {
		if c != gocache && c != telemetry {
			t.Errorf("create names %v: only tool directories (%s, %s)", c, gocache, telemetry)
		}
	}
	if _, err := os.Stat(gocache); err == nil {
		t.Fatal("GOCACHE was made before the answer")
	}
	io.WriteString(s.in, answerLine(req["id"], "s", q["approval_id"].(string), "allowed-once")+"\n")
	m := s.get(pending)
	again, _ := m["result"].(map[string]any)
	if again["exit_code"] != float64(0) {
		t.Fatalf("allowed once: %v", m)
	}
	created, _ := again["permissions"].(map[string]any)["created"].([]any)
	if !slices.Contains(created, any(gocache)) {
		t.Errorf("permissions.created %v, want %s", created, gocache)
	}
	if fi, err := os.Stat(gocache); err != nil || !fi.IsDir() {
		t.Errorf("GOCACHE not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello")); err != nil {
		t.Errorf("no binary built: %v", err)
	}
}

// TestServeWebBrowserShowsQuestion: the browser panel's card shows what
// is asked, as the terminal does: each requested domain, each path with
// its access, and the missing tool directory sbx would make (issue 29).
func TestServeWebBrowserShowsQuestion(t *testing.T) {
	c := startChromium(t)
	w := startWeb(t)
	w.ok("initialize", map[string]any{})
	ws := t.TempDir()
	turn := w.session("s1", ws, map[string]any{"preset": "auto"})
	c.navigate(w.url)
	c.waitFor("the panel connected", `document.getElementById("status").textContent === "connected"`)

	cache := filepath.Join(outsidePath(t), "go-build")
	p := execParams("s1", turn, "c1", ws, "true")
	p["env"] = map[string]string{"GOCACHE": cache}
	p["sandbox_permissions"], p["justification"] = "with_additional_permissions", "build"
	p["additional_permissions"] = map[string]any{"file_system": map[string]any{"write": []string{cache}},
		"network": map[string]any{"enabled": true, "allowed_domains": []string{"proxy.golang.org"}}}
	pending := w.start("exec", p)
	c.waitFor("a card", `document.querySelectorAll(".card").length === 1`)
	var text string
	c.eval(`document.querySelector(".card").innerText`, &text)
	for _, want := range []string{"network domain: proxy.golang.org", "write: " + cache, "create (missing, made as you): " + cache} {
		if !strings.Contains(text, want) {
			t.Errorf("card reads %q, lacks %q", text, want)
		}
	}
	if strings.Contains(text, "network: enabled") {
		t.Errorf("card reads %q: domains shown as the whole network", text)
	}
	c.click(".card button.reject")
	if _, kind, _ := rpcError(t, w.get(pending)); kind != "denied" {
		t.Errorf("rejected: %s", kind)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Error("a rejected call made the cache")
	}
}

// TestApproverProgramCreate: sbx run --approver, asked for a GOCACHE that
// does not exist, gives the program a question whose "create" names it;
// the program rejecting makes nothing, allowing makes it (issue 29).
func TestApproverProgramCreate(t *testing.T) {
	ws := workspace(t)
	cache := filepath.Join(outsidePath(t), "cache", "go-build")
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked.json")
	for _, outcome := range []string{"rejected", "allowed-once"} {
		p := filepath.Join(dir, outcome+".sh")
		writeFile(t, p, "#!/bin/sh\ncat >"+asked+"\necho '{\"outcome\":\""+outcome+"\"}'\n")
		os.Chmod(p, 0o755)
		o := sbx(t, opts{dir: ws, env: []string{"GOCACHE=" + cache}, args: []string{"run", "--mode", "workspace-write",
			"--sandbox-permissions", "with_additional_permissions", "--justification", "build", "--allow-write", cache,
			"--approver", p, "--", "true"}})
		b, err := os.ReadFile(asked)
		var q struct {
			Create []string `json:"create"`
		}
		if err != nil || json.Unmarshal(b, &q) != nil || !slices.Equal(q.Create, []string{cache}) {
			t.Fatalf("%s: the program read %s (%v); want create [%s]", outcome, b, err, cache)
		}
		_, statErr := os.Stat(cache)
		if outcome == "rejected" && (o.code == 0 || statErr == nil) {
			t.Errorf("rejected: exit %d, made %v", o.code, statErr == nil)
		}
		if outcome == "allowed-once" && (o.code != 0 || statErr != nil) {
			t.Errorf("allowed: exit %d %s, made: %v", o.code, o.stderr, statErr)
		}
	}
}
