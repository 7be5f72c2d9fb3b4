//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/tools"
)

// The corpus of real workflows (issue 29): everyday tools run under
// workspace-write the way an agent runtime runs them, each loop starting
// from no grants, judged against the same workflow run bare. The workflows
// themselves are in workflow_corpus_test.go; this file is the harness.
//
// Each workflow runs:
//
//  1. bare, once: its stdout (normalised where it legitimately differs,
//     e.g. timings) is what every sandboxed run must print;
//  2. through `sbx exec`: each step runs, and while its result has a
//     retry.grant, the grant is added to the turn's grants (grants.turn)
//     and the step runs again (the runtime asked its user itself);
//  3. through `sbx serve`, approval policy on-request, with an --approver
//     program that logs every question and approves it: a step that fails
//     is sent again as its retry.request (the escalation; the approver is
//     asked), and once it went through, its retry.grant is recorded for the
//     turn with grants/apply, so the later steps do not ask again.
//
// Both loops run with the tool's default directories under a fresh HOME
// (empty caches), and again with its cache relocated by its environment
// variable. Each asserts: no retry on a successful call; at most one
// approval for the whole workflow; every grant stable (no hash-named,
// dated or temporary name, not HOME, not a directory on PATH) and inside
// the tool table's directories (or, for git, the repository's .git); the
// final output equal to the bare run's.
//
// The corpus runs on the host only: the VM guests and the containers are
// busybox, and declare the tools absent (SBX_IT_ABSENT_TOOLS).

// workflow is one entry of the corpus.
type workflow struct {
	name string
	// tools are the programs it runs (corpusTool finds each).
	tools []string
	// prepare, when set, runs once before the workflow's runs and may add
	// to bin what its steps need (a registry's URL, a template).
	prepare func(t *testing.T, bin map[string]string)
	// request, when set, gives fields every sandboxed call of the workflow
	// adds to its request (the network: the runtime's own setting).
	request func(bin map[string]string) map[string]any
	// sandboxed, when set, is a step as the sandboxed runs send it (a
	// local registry's URL by the name sbx's proxy resolves).
	sandboxed func(bin map[string]string, step []string) []string
	// setup fills the workspace ws; bin has the tools' paths by name.
	setup func(t *testing.T, ws string, bin map[string]string)
	// steps are the calls, in order, each an argv; bin names the tools.
	steps func(bin map[string]string) [][]string
	// env is the workflow's own environment (PATH and the like), besides
	// HOME, which each run gets fresh.
	env func(bin map[string]string) []string
	// relocate is the variable that moves the tool's cache; the relocated
	// run sets it to a missing directory outside HOME and the workspace.
	relocate string
	// bareEnv, when set, is extra environment for the bare run only: a
	// warm cache of the user's, which changes nothing bare but the time.
	bareEnv func(bin map[string]string) []string
	// norm, when set, normalises stdout (timings).
	norm func(string) string
	// git: a grant may be the workspace's .git (the narrow git grant).
	git bool
	// heavy: each run compiles a lot (go's standard library, from an
	// empty cache); its relocated run goes through sbx serve only, whose
	// retry is the same code as sbx exec's, to keep the corpus's time down.
	heavy bool
}

// workflowRun is one run's places: its workspace, its HOME, and the
// directory (outside both) that holds HOME and the relocated cache.
type workflowRun struct {
	ws, dir, home string
	env           []string
}

// newRun makes a fresh workspace set up for wf, a fresh empty HOME outside
// it, and the run's environment (relocated: the cache moved by
// wf.relocate).
func newRun(t *testing.T, wf workflow, bin map[string]string, relocated bool) workflowRun {
	t.Helper()
	r := workflowRun{ws: workspace(t), dir: outsidePath(t)}
	r.home = filepath.Join(r.dir, "home")
	if err := os.MkdirAll(r.home, 0o755); err != nil {
		t.Fatal(err)
	}
	wf.setup(t, r.ws, bin)
	r.env = append([]string{"HOME=" + r.home, "LANG=C.UTF-8"}, wf.env(bin)...)
	if relocated {
		r.env = append(r.env, wf.relocate+"="+filepath.Join(r.dir, "relocated"))
	}
	return r
}

// corpusTool returns the path of a program of the corpus: the first
// candidate that this user can run, else the one on PATH. One the
// environment declares absent (SBX_IT_ABSENT_TOOLS) skips the workflow.
func corpusTool(t *testing.T, name string, candidates ...string) string {
	t.Helper()
	for _, absent := range strings.Fields(os.Getenv("SBX_IT_ABSENT_TOOLS")) {
		if absent == name {
			t.Skipf("SKIP: %s is not installed in this environment (SBX_IT_ABSENT_TOOLS=%q): the workflow corpus runs on the host only (the VM guests and containers are busybox)", name, os.Getenv("SBX_IT_ABSENT_TOOLS"))
		}
	}
	for _, c := range candidates {
		if exec.Command(c, "--version").Run() == nil {
			return c
		}
	}
	if name == "go" {
		return goTool(t)
	}
	p := needTool(t, name)
	if err := exec.Command(p, "--version").Run(); err != nil {
		t.Fatalf("%s (%s) cannot run as uid %d: %v (.ci/run installs one every user can run)", name, p, os.Getuid(), err)
	}
	return p
}

// bareEnv is the environment of a bare run: what env_policy "clean" keeps
// of the test's environment (less TMPDIR, as for sbx), then env.
func bareEnv(env []string) []string {
	var out []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return append(out, env...)
}

// envObject is env as a request's "env" object.
func envObject(env []string) map[string]any {
	m := map[string]any{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		m[k] = v
	}
	return m
}

// runBare runs wf's steps outside any sandbox and returns their stdout.
func runBare(t *testing.T, wf workflow, bin map[string]string) string {
	t.Helper()
	r := newRun(t, wf, bin, false)
	if wf.bareEnv != nil {
		r.env = append(r.env, wf.bareEnv(bin)...)
	}
	var out strings.Builder
	for _, step := range wf.steps(bin) {
		cmd := exec.Command(step[0], step[1:]...)
		cmd.Dir, cmd.Env = r.ws, bareEnv(r.env)
		b, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("bare %q: %v\n%s%s", step, err, b, stderr)
		}
		out.Write(b)
	}
	return normalise(wf, out.String())
}

func normalise(wf workflow, s string) string {
	if wf.norm != nil {
		return wf.norm(s)
	}
	return s
}

// judgeResult checks what every result must satisfy: a call that exited 0
// carries no retry (quiet on success).
func judgeResult(t *testing.T, step []string, res map[string]any) {
	t.Helper()
	if res["exit_code"] == float64(0) && res["retry"] != nil {
		t.Errorf("%q exited 0 with a retry: %v (denials %v)", step, res["retry"], res["denials"])
	}
}

// retryGrant returns the result's retry.grant, failing when the call
// failed without one (nothing a runtime could ask for), and checks that
// the retry asks for that grant.
func retryGrant(t *testing.T, step []string, res map[string]any) map[string]any {
	t.Helper()
	retry, _ := res["retry"].(map[string]any)
	grant, _ := retry["grant"].(map[string]any)
	if grant == nil {
		t.Fatalf("%q failed (exit %v) with no retry.grant: retry %v\ndenials %v\nstderr %v", step, res["exit_code"], res["retry"], res["denials"], res["stderr"])
	}
	// The retry itself (what a runtime that follows it asks for) is the
	// grant, never the escalation to full access (issue 29, cases 1 and 6).
	if retry["sandbox_permissions"] != "with_additional_permissions" {
		t.Errorf("%q: retry %v asks for %v, want with_additional_permissions", step, retry, retry["sandbox_permissions"])
	}
	return grant
}

var (
	corpusHex   = regexp.MustCompile(`^[0-9a-f]{2}$|^[0-9a-f]{8,}`)
	corpusDated = regexp.MustCompile(`(19|20)\d\d[-_.]?[01]\d[-_.]?[0-3]\d`)
	corpusTemp  = regexp.MustCompile(`(?i)(^|[._-])(tmp|temp)([._-]|$)|~$`)
)

// judgeGrant checks that every path of grant is one a person would grant
// and that stays right on the next run: inside a table directory of the
// call's environment (or the workspace's .git, for git), never HOME or
// above, never a place whose contents run later outside the sandbox (a
// directory on PATH, a tool's bin), and with no hash-named, dated or
// temporary name below the run's directory.
func judgeGrant(t *testing.T, wf workflow, r workflowRun, grant map[string]any) {
	t.Helper()
	roots := tools.Resolve(r.env)
	fs, _ := grant["file_system"].(map[string]any)
	if fs == nil || len(grant) != 1 {
		t.Errorf("grant %v: want file-system paths only", grant)
	}
	for _, access := range []string{"read", "write"} {
		list, _ := fs[access].([]any)
		for _, x := range list {
			p, _ := x.(string)
			if wf.git && p == filepath.Join(r.ws, ".git") {
				continue
			}
			if p == "/" || p == r.home || strings.HasPrefix(r.home, p+"/") {
				t.Errorf("grant %s %s: the home directory or above", access, p)
			}
			if !roots.Contains(p) {
				t.Errorf("grant %s %s: not inside a tool table directory of the call's environment", access, p)
			}
			if n, bad := roots.Never(p); bad {
				t.Errorf("grant %s %s: lets the command write %s (%s), which runs later outside the sandbox", access, p, n.Path, n.Tool)
			}
			rel, err := filepath.Rel(r.dir, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			for _, name := range strings.Split(rel, "/") {
				if corpusHex.MatchString(name) || corpusDated.MatchString(name) || corpusTemp.MatchString(name) {
					t.Errorf("grant %s %s: %q is a name the tool picks afresh (hash, date or temporary)", access, p, name)
				}
			}
		}
	}
}

// mergeGrant adds grant's paths to turn (a runtime keeps every grant of
// the turn); other keys are replaced.
func mergeGrant(turn, grant map[string]any) {
	for k, v := range grant {
		if k != "file_system" {
			turn[k] = v
			continue
		}
		dst, _ := turn[k].(map[string]any)
		if dst == nil {
			dst = map[string]any{}
			turn[k] = dst
		}
		for access, list := range v.(map[string]any) {
			have, _ := dst[access].([]any)
			for _, p := range list.([]any) {
				if !slices.Contains(have, p) {
					have = append(have, p)
				}
			}
			dst[access] = have
		}
	}
}

// workflowRequest is a step's sbx exec request.
func workflowRequest(wf workflow, bin map[string]string, r workflowRun, step []string) map[string]any {
	if wf.sandboxed != nil {
		step = wf.sandboxed(bin, step)
	}
	req := map[string]any{"command": step, "cwd": r.ws, "sandbox_mode": "workspace-write",
		"env_policy": map[string]any{"mode": "clean"}, "env": envObject(r.env)}
	if wf.request != nil {
		for k, v := range wf.request(bin) {
			req[k] = v
		}
	}
	return req
}

// corpusCallLimit bounds one call of the corpus: a go build from an empty
// cache compiles the standard library, which takes more than the suite's
// usual 60 s on a loaded two-core machine.
const corpusCallLimit = 5 * time.Minute

// corpusExec runs one sbx exec request and returns the decoded result.
func corpusExec(t *testing.T, req map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), corpusCallLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, sbxBin, "exec")
	cmd.Dir, cmd.Env, cmd.Stdin = t.TempDir(), baseEnv(), strings.NewReader(mustJSON(t, req))
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var res map[string]any
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("sbx exec %q: %v\nstdout %s\nstderr %s", req["command"], err, b, stderr.String())
	}
	return res
}

// corpusServeExec sends one exec to s and returns its result.
func corpusServeExec(t *testing.T, s *server, params map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-s.start("exec", params):
		if m["error"] != nil {
			t.Fatalf("exec %q: %v", params["command"], m["error"])
		}
		r, _ := m["result"].(map[string]any)
		return r
	case <-time.After(corpusCallLimit):
		t.Fatalf("exec %q: no response within %v; stderr: %s", params["command"], corpusCallLimit, s.stderr)
	}
	return nil
}

// execLoop runs wf through sbx exec, applying each retry.grant as a turn
// grant; it returns the stdout and how many grants were applied.
func execLoop(t *testing.T, wf workflow, bin map[string]string, r workflowRun) (string, int) {
	t.Helper()
	turn, approvals := map[string]any{}, 0
	var out strings.Builder
	for _, step := range wf.steps(bin) {
		for try := 0; ; try++ {
			req := workflowRequest(wf, bin, r, step)
			if len(turn) > 0 {
				req["grants"] = map[string]any{"turn": turn}
			}
			res := corpusExec(t, req)
			judgeResult(t, step, res)
			if res["exit_code"] == float64(0) {
				out.WriteString(res["stdout"].(string))
				break
			}
			grant := retryGrant(t, step, res)
			if try > 0 {
				t.Fatalf("%q still fails with the grant %v applied: exit %v, retry %v, stderr %v", step, turn, res["exit_code"], res["retry"], res["stderr"])
			}
			judgeGrant(t, wf, r, grant)
			t.Logf("%q: granted %v", step, grant)
			mergeGrant(turn, grant)
			approvals++
		}
	}
	return normalise(wf, out.String()), approvals
}

// approverLog writes an --approver program that appends each question to
// a log, then a line "--- asked", and approves it; it returns the program
// and the log.
func approverLog(t *testing.T) (prog, log string) {
	t.Helper()
	dir := t.TempDir()
	prog, log = filepath.Join(dir, "approve.sh"), filepath.Join(dir, "asked.log")
	script := fmt.Sprintf("#!/bin/sh\ncat >> %q\nprintf '\\n--- asked\\n' >> %q\necho '{\"outcome\":\"allowed-once\"}'\n", log, log)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, log
}

// serveLoop runs wf through its own sbx serve (on-request, the approver
// program answering); it returns the stdout and how many questions the
// approver was asked (from its log).
func serveLoop(t *testing.T, wf workflow, bin map[string]string, r workflowRun) (string, int) {
	t.Helper()
	prog, log := approverLog(t)
	s := startServer(t, "--approver", prog)
	s.ok("initialize", map[string]any{})
	turn := s.session("w", r.ws, map[string]any{"sandbox_mode": "workspace-write", "approval_policy": "on-request"})
	var out strings.Builder
	for i, step := range wf.steps(bin) {
		p := workflowRequest(wf, bin, r, step)
		delete(p, "sandbox_mode")
		p["session_id"], p["turn_id"], p["call_id"] = "w", turn, fmt.Sprintf("c%d", i)
		res := corpusServeExec(t, s, p)
		judgeResult(t, step, res)
		if res["exit_code"] != float64(0) {
			grant := retryGrant(t, step, res)
			judgeGrant(t, wf, r, grant)
			t.Logf("%q: asking for %v", step, grant)
			retry, _ := res["retry"].(map[string]any)
			again, _ := retry["request"].(map[string]any)
			if again == nil {
				t.Fatalf("%q: retry %v has no request", step, retry)
			}
			again["call_id"], again["justification"] = fmt.Sprintf("c%d-retry", i), "the "+wf.name+" workflow"
			res = corpusServeExec(t, s, again)
			judgeResult(t, step, res)
			if res["exit_code"] != float64(0) {
				t.Fatalf("%q still fails once approved: exit %v, retry %v, stderr %v", step, res["exit_code"], res["retry"], res["stderr"])
			}
			// Approved: the runtime keeps the grant for the rest of the
			// turn, as it would after asking its user.
			s.ok("grants/apply", map[string]any{"session_id": "w", "requested": grant,
				"response": map[string]any{"granted": grant, "scope": "turn"}})
		}
		out.WriteString(res["stdout"].(string))
	}
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return normalise(wf, out.String()), strings.Count(string(b), "\n--- asked\n")
}

// TestWorkflows runs the corpus (issue 29), each workflow in parallel with
// the others, its four loops (exec and serve, default and relocated) in
// parallel too, all against one bare run.
func TestWorkflows(t *testing.T) {
	requireWriteRestriction(t)
	if !caps(t).supervised {
		Require(t, "denial-reports")
	}
	if viaServe {
		skipVia(t, "the corpus drives sbx exec and servers of its own; it ran in the passes without SBX_IT_VIA")
	}
	for _, wf := range slices.Concat(corpus, registryCorpus) {
		t.Run(wf.name, func(t *testing.T) {
			t.Parallel()
			bin := map[string]string{}
			for _, name := range wf.tools {
				bin[name] = corpusTool(t, name, toolCandidates[name]...)
			}
			if wf.prepare != nil {
				wf.prepare(t, bin)
			}
			bare := runBare(t, wf, bin)
			for _, relocated := range []bool{false, true} {
				for _, via := range []string{"exec", "serve"} {
					if relocated && wf.heavy && via == "exec" {
						continue
					}
					name := via
					if relocated {
						name += "/" + wf.relocate
					}
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						r := newRun(t, wf, bin, relocated)
						loop := execLoop
						if via == "serve" {
							loop = serveLoop
						}
						got, approvals := loop(t, wf, bin, r)
						if approvals > 1 {
							t.Errorf("%d approvals to converge, want at most one", approvals)
						}
						if got != bare {
							t.Errorf("stdout %q, want the bare run's %q", got, bare)
						}
						t.Logf("%d approval(s)", approvals)
					})
				}
			}
		})
	}
}
