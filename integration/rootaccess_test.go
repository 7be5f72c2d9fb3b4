//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// otherUID owns the workspace of TestRootOverOtherUID: nobody, a uid no
// test runs as.
const otherUID = 65534

// TestRootOverOtherUID (issue 27 §5): root's command holds no capability,
// so over a workspace another uid owns (an agent as root in a container,
// a volume of uid 1000) the kernel refuses its writes with EACCES. The
// capabilities stay dropped; the report and explain name the root, the
// refused write is an inferred denial whose retry keeps CAP_DAC_OVERRIDE,
// and that retry goes through approval (refused under never, let through
// by an approver or as the caller's own). On the old code the report had
// no downgrade, no denial and no retry. An unprivileged caller's command
// has the caller's own permissions, as without sbx: nothing is reported.
func TestRootOverOtherUID(t *testing.T) {
	ws := workspace(t)
	if !isRoot() {
		if err := os.Chmod(ws, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ws, 0o755) })
		r, rep := probe(t, ws, wsWrite, "create", filepath.Join(ws, "f"))
		want(t, r, "EACCES")
		if rep.degraded("writable-root-access") != "" || len(rep.Denials) != 0 {
			t.Errorf("unprivileged, the caller's own permissions: degraded %+v, denials %+v; want neither", rep.Degraded, rep.Denials)
		}
		return
	}
	if err := os.Chown(ws, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(ws, "f")
	r, rep := probe(t, ws, wsWrite, "create", target)
	want(t, r, "EACCES")
	if reason := rep.degraded("writable-root-access"); !strings.Contains(reason, ws) {
		t.Errorf("degraded %+v: want writable-root-access naming %s", rep.Degraded, ws)
	}
	var d *denial
	for i := range rep.Denials {
		if rep.Denials[i].Operation == "create" && rep.Denials[i].Path == target {
			d = &rep.Denials[i]
		}
	}
	if d == nil || d.Confidence != "inferred" || !strings.Contains(d.Reason, "uid 65534") {
		t.Fatalf("denials %+v: want an inferred create of %s naming the owner", rep.Denials, target)
	}
	var retry struct {
		CapAdd  []string       `json:"cap_add"`
		Argv    []string       `json:"argv"`
		Request map[string]any `json:"request"`
	}
	if err := json.Unmarshal(rep.raw["retry"], &retry); err != nil {
		t.Fatalf("retry %s: %v", rep.raw["retry"], err)
	}
	if !privileged() {
		// Root without CAP_SYS_ADMIN: a stage in a user namespace, which
		// can keep no capability; the denial says so and nothing retries.
		if len(retry.CapAdd) != 0 || !strings.Contains(d.Reason, "can keep a capability") {
			t.Errorf("root without CAP_SYS_ADMIN: retry %s, denial %q; want no cap_add, a reason saying why", rep.raw["retry"], d.Reason)
		}
		return
	}
	if !slices.Equal(retry.CapAdd, []string{"CAP_DAC_OVERRIDE"}) || !strings.Contains(d.Reason, "CAP_DAC_OVERRIDE") {
		t.Fatalf("retry %s, denial %q: want cap_add [CAP_DAC_OVERRIDE]", rep.raw["retry"], d.Reason)
	}
	// A chmod of another uid's file: EPERM, and the capability is CAP_FOWNER.
	theirs := writeFile(t, filepath.Join(ws, "theirs"), "x\n")
	if err := os.Chown(theirs, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	r, rep = probe(t, ws, wsWrite, "chmod", theirs, "0600")
	want(t, r, "EPERM")
	var chmodRetry struct {
		CapAdd []string `json:"cap_add"`
	}
	json.Unmarshal(rep.raw["retry"], &chmodRetry)
	if !rep.denied("chmod", theirs) || !slices.Equal(chmodRetry.CapAdd, []string{"CAP_FOWNER"}) {
		t.Errorf("chmod of %s: denials %+v, retry %s; want a chmod denial asking for CAP_FOWNER", theirs, rep.Denials, rep.raw["retry"])
	}
	if viaServe {
		rootRetryViaServe(t, ws, target, retry.Request)
		return
	}
	explain := sbx(t, opts{args: []string{"explain", "--mode", "workspace-write", "--cwd", ws}})
	if !strings.Contains(explain.stdout+explain.stderr, "writable-root-access: "+ws) {
		t.Errorf("sbx explain does not name %s:\n%s%s", ws, explain.stdout, explain.stderr)
	}
	// The retry's argv, under never: refused before anything runs.
	argv := slices.Clone(retry.Argv[1:])
	dash := slices.Index(argv, "--")
	for i := range argv[:dash] {
		switch argv[i] {
		case "--justification":
			argv[i+1] = "the workspace belongs to uid 65534"
		case "--report":
			argv[i+1] = filepath.Join(t.TempDir(), "retry.json")
		}
	}
	never := slices.Insert(slices.Clone(argv), dash, "--approval-policy", "never")
	if out := sbx(t, opts{dir: ws, args: never}); out.code != 125 || !strings.Contains(out.stderr, "approval denied") {
		t.Errorf("retry under never: exit %d, stderr %q; want 125, approval denied", out.code, out.stderr)
	}
	wantAbsent(target)(t)
	// Approved: the write goes through.
	approver := filepath.Join(t.TempDir(), "approve.sh")
	asked := approver + ".req"
	if err := os.WriteFile(approver, []byte("#!/bin/sh\ncat > "+asked+"\necho '{\"outcome\":\"allowed-once\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := sbx(t, opts{dir: ws, args: slices.Insert(slices.Clone(argv), dash, "--approver", approver)})
	if r := parseProbe(t, out); !r.OK {
		t.Errorf("the approved retry: %s", r)
	}
	if b, _ := os.ReadFile(asked); !strings.Contains(string(b), `"cap_add":["CAP_DAC_OVERRIDE"]`) {
		t.Errorf("the approver was asked %s, want cap_add CAP_DAC_OVERRIDE in it", b)
	}
	// cap_add in an exec request, not the caller's own: refused.
	req := `{"command":["` + probeBin + `","create","` + target + `2"],"cwd":"` + ws + `","sandbox_mode":"workspace-write","cap_add":["CAP_DAC_OVERRIDE"]}`
	if out := sbx(t, opts{dir: ws, args: []string{"exec"}, stdin: strings.NewReader(req)}); out.code != 125 || !strings.Contains(out.stdout+out.stderr, "cap_add") {
		t.Errorf("exec with a cap_add under use_default: exit %d, %s%s; want 125 naming cap_add", out.code, out.stdout, out.stderr)
	}
	wantAbsent(target + "2")(t)
}

// rootRetryViaServe applies the retry's request through the server: asked
// for (with_additional_permissions) in a never session it is refused; as
// the runtime's own (preauthorized, the grant form) it runs.
func rootRetryViaServe(t *testing.T, ws, target string, req map[string]any) {
	if req == nil || req["cap_add"] == nil {
		t.Fatalf("retry request %v: want cap_add", req)
	}
	asked := map[string]any{}
	for k, v := range req {
		asked[k] = v
	}
	asked["justification"] = "the workspace belongs to uid 65534"
	for _, k := range []string{"session_id", "turn_id", "call_id"} {
		delete(asked, k)
	}
	out, _ := serveExec(t, serveCall{session: map[string]any{"cwd": ws, "sandbox_mode": "workspace-write", "approval_policy": "never"}, req: asked})
	if out.code == 0 {
		t.Errorf("the retry asked for under never ran: %s", out.stdout)
	}
	wantAbsent(target)(t)
	out = serveRetryRequest(t, ws, "workspace-write", req)
	if r := parseProbe(t, out); !r.OK {
		t.Errorf("the retry as the runtime's own: %s", r)
	}
}
