//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// execEnv runs one sbx exec request with extra environment for sbx (and
// so the command) and returns the decoded result.
func execEnv(t *testing.T, req map[string]any, env []string) map[string]any {
	t.Helper()
	o := sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, req)), env: env})
	var res map[string]any
	if o.code != 0 || json.Unmarshal([]byte(o.stdout), &res) != nil {
		t.Fatalf("sbx exec: exit %d stdout %s stderr %q", o.code, o.stdout, o.stderr)
	}
	return res
}

// grantWrites returns retry.grant's write paths, failing without one.
func grantWrites(t *testing.T, res map[string]any) (map[string]any, []string) {
	t.Helper()
	retry, _ := res["retry"].(map[string]any)
	grant, _ := retry["grant"].(map[string]any)
	fs, _ := grant["file_system"].(map[string]any)
	if fs == nil {
		t.Fatalf("no retry.grant with paths: %v", res["retry"])
	}
	var out []string
	for _, w := range fs["write"].([]any) {
		out = append(out, w.(string))
	}
	return grant, out
}

// goModule makes a Go module in a fresh workspace (not a repository) and an
// environment that keeps every directory go writes under out, outside the
// writable roots: GOCACHE (gocache, missing), GOPATH, the telemetry's
// XDG_CONFIG_HOME; no toolchain download, no module proxy.
func goModule(t *testing.T) (goBin, ws, out, gocache string, env []string) {
	t.Helper()
	goBin = goTool(t)
	ws = workspace(t)
	out = outsidePath(t)
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	gocache = filepath.Join(out, "gocache")
	writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/hello\n\ngo 1.21\n")
	writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nfunc main() { println(\"hello\") }\n")
	env = []string{"GOCACHE=" + gocache, "GOPATH=" + filepath.Join(out, "gopath"), "XDG_CONFIG_HOME=" + filepath.Join(out, "config"),
		"GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOPROXY=off", "PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin"}
	return goBin, ws, out, gocache, env
}

// TestRetryGoEmptyCache: go build with GOCACHE pointing at a directory
// that does not exist, outside the writable roots, converges in one
// approval: the retry grants GOCACHE itself (not its parent, not HOME),
// sbx makes it on the grant and says so, and the build then succeeds
// (issue 29).
func TestRetryGoEmptyCache(t *testing.T) {
	requireWriteRestriction(t)
	if !caps(t).supervised {
		Require(t, "denial-reports")
	}
	goBin, ws, out, gocache, env := goModule(t)
	req := map[string]any{"command": []string{goBin, "build", "-o", "hello", "."}, "cwd": ws, "sandbox_mode": "workspace-write"}
	res := execEnv(t, req, env)
	if res["exit_code"] == float64(0) {
		t.Fatalf("go build with a GOCACHE it cannot make succeeded: %v", res)
	}
	grant, writes := grantWrites(t, res)
	telemetry := filepath.Join(out, "config", "go", "telemetry")
	for _, w := range writes {
		if w != gocache && w != telemetry {
			t.Errorf("retry grants %s: want only %s (and %s)", w, gocache, telemetry)
		}
	}
	if !slices.Contains(writes, gocache) {
		t.Fatalf("retry grants %q, want %s", writes, gocache)
	}
	req["grants"] = map[string]any{"turn": grant}
	again := execEnv(t, req, env)
	if again["exit_code"] != float64(0) {
		t.Fatalf("with the grant: %v", again)
	}
	created, _ := again["permissions"].(map[string]any)["created"].([]any)
	if !slices.Contains(created, any(gocache)) {
		t.Errorf("permissions.created %v, want %s", created, gocache)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello")); err != nil {
		t.Errorf("no binary built: %v", err)
	}
}

// TestRetryGitCommitNarrow: git commit under workspace-write is refused in
// .git; the retry's first answer is that .git writable for the call (the
// escalation second); applied as a grant it commits, while hooks/ stays
// read-only and a commondir the command makes is removed after the call
// and reported (issue 29).
func TestRetryGitCommitNarrow(t *testing.T) {
	requireWriteRestriction(t)
	if !caps(t).supervised {
		Require(t, "denial-reports")
	}
	ws := workspace(t)
	gitRepo(t, ws)
	writeFile(t, filepath.Join(ws, "f"), "x\n")
	commit := "git add f && git -c user.name=sbx -c user.email=sbx@example.com commit -q -m second"
	req := map[string]any{"command": []string{"sh", "-c", commit}, "cwd": ws, "sandbox_mode": "workspace-write"}
	res := execEnv(t, req, nil)
	if res["exit_code"] == float64(0) {
		t.Fatalf("git commit in a read-only .git succeeded: %v", res)
	}
	grant, writes := grantWrites(t, res)
	git := filepath.Join(ws, ".git")
	if !slices.Equal(writes, []string{git}) {
		t.Fatalf("retry grants %q, want [%s]", writes, git)
	}
	alts, _ := res["retry"].(map[string]any)["alternatives"].([]any)
	if len(alts) != 2 || alts[1].(map[string]any)["escalate_to"] != "danger-full-access" {
		t.Errorf("retry.alternatives %v: want the narrow grant, then danger-full-access", alts)
	}
	req["grants"] = map[string]any{"turn": grant}
	if again := execEnv(t, req, nil); again["exit_code"] != float64(0) {
		t.Fatalf("with the grant: %v", again)
	}
	log, err := exec.Command("git", "-C", ws, "log", "--format=%s").Output()
	if err != nil || !strings.HasPrefix(string(log), "second\n") {
		t.Errorf("git log %q %v: want the commit made", log, err)
	}
	// Forbidden under the same grant: a hook, the config, a commondir.
	hook := filepath.Join(git, "hooks", "post-checkout")
	req["command"] = []string{"sh", "-c", "echo '#!/bin/sh' > " + hook + "; echo '[core] fsmonitor = x' >> .git/config; echo /tmp > .git/commondir; true"}
	configBefore, _ := os.ReadFile(filepath.Join(git, "config"))
	res = execEnv(t, req, nil)
	wantAbsent(hook)(t)
	wantAbsent(filepath.Join(git, "commondir"))(t)
	if after, _ := os.ReadFile(filepath.Join(git, "config")); string(after) != string(configBefore) {
		t.Errorf(".git/config changed under the narrow grant: %q", after)
	}
	found := false
	for _, d := range res["denials"].([]any) {
		if d.(map[string]any)["path"] == filepath.Join(git, "commondir") {
			found = true
		}
	}
	if !found {
		t.Errorf("the removed commondir is not reported: %v", res["denials"])
	}
	// The check after the call removes only inside the granted .git: a
	// .git swapped for a link to another directory leaves that directory's
	// commondir alone.
	victim := outsidePath(t)
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(victim, "commondir"), "keep\n")
	req["command"] = []string{"sh", "-c", "mv .git .git-moved && ln -s " + victim + " .git; true"}
	execEnv(t, req, nil)
	if b, err := os.ReadFile(filepath.Join(victim, "commondir")); err != nil || string(b) != "keep\n" {
		t.Errorf("%s/commondir after a .git swapped for a link: %q %v; want it untouched", victim, b, err)
	}
}

// TestToolOptIn: "tools": ["go"] gives go build what it needs without a
// retry: GOCACHE, outside the writable roots and missing, is made and
// writable; the report names the tool and the directory made (issue 29).
func TestToolOptIn(t *testing.T) {
	requireWriteRestriction(t)
	goBin, ws, _, gocache, env := goModule(t)
	req := map[string]any{"command": []string{goBin, "build", "-o", "hello", "."}, "cwd": ws, "sandbox_mode": "workspace-write", "tools": []string{"go"}}
	res := execEnv(t, req, env)
	if res["exit_code"] != float64(0) {
		t.Fatalf("go build with tools [go]: %v", res)
	}
	perms := res["permissions"].(map[string]any)
	created, _ := perms["created"].([]any)
	if !slices.Contains(created, any(gocache)) || !slices.Equal(perms["tools"].([]any), []any{"go"}) {
		t.Errorf("permissions %v: want tools [go] and %s created", perms, gocache)
	}
}
