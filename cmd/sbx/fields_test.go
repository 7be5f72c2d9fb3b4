package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// cliRequest is the call `sbx run ARGS` describes, as runCmd makes it.
func cliRequest(args []string) (call.Request, *flagSet, error) {
	fs := newFlagSet("run", runUsage, Stdio{Err: io.Discard})
	var rf runFlags
	rf.register(fs.FlagSet)
	if _, ok := fs.parse(args); !ok {
		return call.Request{}, fs, errors.New("flags refused")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	r, err := rf.request(fs.Args(), set)
	return r, fs, err
}

// jsonRequest is the call the `sbx exec` request m describes.
func jsonRequest(m map[string]any) (call.Request, []byte, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return call.Request{}, nil, err
	}
	req, err := wire.Decode(raw)
	if err != nil {
		return call.Request{}, raw, err
	}
	r, _, err := req.Call(os.Environ())
	return r, raw, err
}

// fieldCase sets one row of call.Fields by flag and by JSON, in a call
// where it means something (workspace-write, preauthorized), and, for a
// row that means nothing in some mode, in that mode (refused by both).
type fieldCase struct {
	flags []string
	json  map[string]any
	// badMode is a mode where the row means nothing ("": none).
	badMode string
}

// TestFieldTable walks call.Fields: each row set by flag and by JSON makes
// the same prepared call (or the same refusal, naming the flag on the CLI
// and the key in JSON); a row given where it means nothing is refused by
// both front ends, each naming it in its own words; and the retry of the
// call, as argv and as JSON, describes the same request again (issue 28 §1).
func TestFieldTable(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	ws, _ = filepath.EvalSymlinks(ws)
	out, _ = filepath.EvalSymlinks(out)
	extra := filepath.Join(ws, "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	guard := filepath.Join(t.TempDir(), "guard.json")
	if err := os.WriteFile(guard, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	domains := []string{"--allow-domain", "a.test"}
	cases := map[string]fieldCase{
		"command":      {},
		"cwd":          {flags: []string{"--cwd", extra}, json: map[string]any{"cwd": extra}},
		"sandbox_mode": {flags: []string{"--mode", "read-only"}, json: map[string]any{"sandbox_mode": "read-only"}},
		"writable_roots": {flags: []string{"--writable-root", extra}, json: map[string]any{"writable_roots": []string{extra}},
			badMode: "danger-full-access"},
		"exclude_tmp":    {flags: []string{"--exclude-tmp"}, json: map[string]any{"exclude_tmp": true}, badMode: "read-only"},
		"exclude_tmpdir": {flags: []string{"--exclude-tmpdir"}, json: map[string]any{"exclude_tmpdir": true}, badMode: "read-only"},
		"read_only":      {flags: []string{"--read-only", extra}, json: map[string]any{"read_only": []string{extra}}, badMode: "read-only"},
		"protect":        {flags: []string{"--protect", "secret"}, json: map[string]any{"protect": []string{"secret"}}, badMode: "danger-full-access"},
		"no_default_protect": {flags: []string{"--no-default-protect"}, json: map[string]any{"no_default_protect": true},
			badMode: "read-only"},
		"network_access": {flags: []string{"--network"}, json: map[string]any{"network_access": true}, badMode: "danger-full-access"},
		"additional_permissions.file_system.read": {flags: []string{"--allow-read", out},
			json: map[string]any{"additional_permissions": map[string]any{"file_system": map[string]any{"read": []string{out}}}}, badMode: "danger-full-access"},
		"additional_permissions.file_system.write": {flags: []string{"--allow-write", out},
			json: map[string]any{"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{out}}}}, badMode: "danger-full-access"},
		"additional_permissions.network.allowed_domains": {flags: domains,
			json: map[string]any{"additional_permissions": map[string]any{"network": map[string]any{"enabled": true, "allowed_domains": []string{"a.test"}}}}, badMode: "danger-full-access"},
		"additional_permissions.network.denied_domains": {flags: append([]string{"--deny-domain", "b.a.test"}, domains...),
			json: map[string]any{"additional_permissions": map[string]any{"network": map[string]any{"enabled": true, "allowed_domains": []string{"a.test"}, "denied_domains": []string{"b.a.test"}}}}, badMode: "danger-full-access"},
		"additional_permissions.network.allow_private_addresses": {flags: append([]string{"--allow-private-addresses"}, domains...),
			json: map[string]any{"additional_permissions": map[string]any{"network": map[string]any{"enabled": true, "allowed_domains": []string{"a.test"}, "allow_private_addresses": true}}}, badMode: "danger-full-access"},
		"resolve": {flags: append([]string{"--resolve", "a.test:443:127.0.0.1"}, domains...),
			json: map[string]any{"resolve": []string{"a.test:443:127.0.0.1"}, "additional_permissions": map[string]any{"network": map[string]any{"enabled": true, "allowed_domains": []string{"a.test"}}}}, badMode: "danger-full-access"},
		"require": {flags: []string{"--require", "landlock"}, json: map[string]any{"require": []string{"landlock"}}},
		// git's row has no directories: the case makes none in HOME.
		"tools":               {flags: []string{"--tool", "git"}, json: map[string]any{"tools": []string{"git"}}, badMode: "danger-full-access"},
		"cap_add":             {flags: []string{"--cap-add", "CAP_CHOWN"}, json: map[string]any{"cap_add": []string{"CAP_CHOWN"}}},
		"call_id":             {json: map[string]any{"call_id": "c1"}},
		"environment_id":      {json: map[string]any{"environment_id": "e1"}},
		"sandbox_permissions": {flags: []string{"--sandbox-permissions", "use_default"}, json: map[string]any{"sandbox_permissions": "use_default"}},
		"escalate_to": {flags: []string{"--escalate", "danger-full-access", "--justification", "j"},
			json: map[string]any{"sandbox_permissions": "require_escalated", "escalate_to": "danger-full-access", "justification": "j", "preauthorized": false}},
		"justification":       {flags: []string{"--justification", "j"}, json: map[string]any{"justification": "j"}},
		"guard":               {flags: []string{"--guard", guard}, json: map[string]any{"guard": guard}},
		"approval_policy":     {flags: []string{"--approval-policy", "on-failure"}, json: map[string]any{"approval_policy": "on-failure"}},
		"timeout_ms":          {flags: []string{"--timeout", "1500ms"}, json: map[string]any{"timeout_ms": 1500}},
		"kill_grace_ms":       {flags: []string{"--kill-grace", "3s"}, json: map[string]any{"kill_grace_ms": 3000}},
		"limits.memory_bytes": {flags: []string{"--memory", "64M"}, json: map[string]any{"limits": map[string]any{"memory_bytes": 64 << 20}}},
		"limits.pids":         {flags: []string{"--pids", "50"}, json: map[string]any{"limits": map[string]any{"pids": 50}}},
		"limits.cpus":         {flags: []string{"--cpus", "0.5"}, json: map[string]any{"limits": map[string]any{"cpus": 0.5}}},
		"env_policy.mode":     {flags: []string{"--env-mode", "clean"}, json: map[string]any{"env_policy": map[string]any{"mode": "clean"}}},
		"env_policy.allow": {flags: []string{"--env-mode", "allow-list", "--env-allow", "HOME"},
			json: map[string]any{"env_policy": map[string]any{"mode": "allow-list", "allow": []string{"HOME"}}}},
		"env":          {flags: []string{"--setenv", "A=b"}, json: map[string]any{"env": map[string]any{"A": "b"}}},
		"shell.kind":   {flags: []string{"--shell", "sh", "-c", "true"}, json: map[string]any{"shell": map[string]any{"kind": "sh", "script": "true"}}},
		"shell.script": {flags: []string{"--shell", "sh", "-c", "exit 0"}, json: map[string]any{"shell": map[string]any{"kind": "sh", "script": "exit 0"}}},
		"shell.login": {flags: []string{"--shell", "sh", "-c", "true", "--login"},
			json: map[string]any{"shell": map[string]any{"kind": "sh", "script": "true", "login": true}}},
		"retry_on_success": {flags: []string{"--retry-on-success"}, json: map[string]any{"retry_on_success": true}},
	}
	for _, f := range call.Fields {
		c, ok := cases[f.Key]
		if !ok {
			t.Errorf("row %s has no case: add one", f.Key)
			continue
		}
		t.Run(f.Key, func(t *testing.T) {
			base := func(mode string) ([]string, map[string]any) {
				var args []string
				if _, ok := c.json["sandbox_mode"]; !ok {
					args = append(args, "--mode", mode)
				}
				if _, ok := c.json["cwd"]; !ok {
					args = append(args, "--cwd", ws)
				}
				if _, ok := c.json["approval_policy"]; !ok {
					args = append(args, "--approval-policy", "never")
				}
				return args, map[string]any{"command": []string{"true"}, "cwd": ws, "sandbox_mode": mode, "preauthorized": true, "approval_policy": "never"}
			}
			command := []string{"--", "true"}
			if _, ok := c.json["shell"]; ok {
				command = nil
			}
			args, m := base("workspace-write")
			args = append(append(args, c.flags...), command...)
			if command == nil {
				delete(m, "command")
			}
			for k, v := range c.json {
				m[k] = v
			}
			if f.Flag == "" && f.Key != "command" && len(c.flags) > 0 {
				t.Fatalf("row %s has no flag but the case sets flags", f.Key)
			}
			cr, fs, cerr := cliRequest(args)
			jr, raw, jerr := jsonRequest(m)
			if cerr != nil || jerr != nil {
				t.Fatalf("flag: %v; JSON: %v", cerr, jerr)
			}
			cp, cerr := call.Prepare(context.Background(), cr)
			jp, jerr := call.Prepare(context.Background(), jr)
			if cerr != nil || jerr != nil {
				checkSameRefusal(t, f, call.Render(cerr, call.CLI), jerr)
				return
			}
			if !reflect.DeepEqual(cp.Call.Policy, jp.Call.Policy) || !reflect.DeepEqual(cp.Permissions, jp.Permissions) ||
				!reflect.DeepEqual(cp.Call.Require, jp.Call.Require) || !reflect.DeepEqual(cp.Call.Cmd, jp.Call.Cmd) ||
				cp.Call.Timeout != jp.Call.Timeout || cp.Call.KillGrace != jp.Call.KillGrace || cp.Call.Limits != jp.Call.Limits ||
				!reflect.DeepEqual(cp.Env, jp.Env) {
				t.Errorf("flag and JSON differ:\npolicy %+v\n   vs %+v\npermissions %+v\n   vs %+v", cp.Call.Policy, jp.Call.Policy, cp.Permissions, jp.Permissions)
			}
			checkRetryRoundTrip(t, cp, jp, fs, args, raw, out)
			if f.Request {
				// Under with_additional_permissions the row is asked about:
				// approval policy never denies it, by flag and by JSON alike.
				wargs, wm := base("workspace-write")
				wargs = append(append(append(wargs, "--sandbox-permissions", "with_additional_permissions", "--justification", "j"), c.flags...), command...)
				for k, v := range c.json {
					wm[k] = v
				}
				wm["sandbox_permissions"], wm["justification"], wm["preauthorized"] = "with_additional_permissions", "j", false
				cr, _, cerr := cliRequest(wargs)
				jr, _, jerr := jsonRequest(wm)
				if cerr != nil || jerr != nil {
					t.Fatalf("with_additional_permissions: flag %v, JSON %v", cerr, jerr)
				}
				_, cerr = call.Prepare(context.Background(), cr)
				_, jerr = call.Prepare(context.Background(), jr)
				if cerr == nil || jerr == nil {
					t.Fatalf("with_additional_permissions under approval policy never: flag %v, JSON %v; want both asked, so denied", cerr, jerr)
				}
				checkSameRefusal(t, f, call.Render(cerr, call.CLI), jerr)
			}
			if c.badMode == "" {
				return
			}
			args, m = base(c.badMode)
			args = append(append(args, c.flags...), command...)
			for k, v := range c.json {
				m[k] = v
			}
			cr, _, cerr = cliRequest(args)
			jr, _, jerr = jsonRequest(m)
			if cerr == nil {
				_, cerr = call.Prepare(context.Background(), cr)
			}
			if jerr == nil {
				_, jerr = call.Prepare(context.Background(), jr)
			}
			if cerr == nil || jerr == nil {
				t.Fatalf("in %s: flag %v, JSON %v; want both refused", c.badMode, cerr, jerr)
			}
			checkSameRefusal(t, f, call.Render(cerr, call.CLI), jerr)
		})
	}
}

// checkSameRefusal: both front ends refused, each naming the row's field
// in its own words (or, for a refusal about another field, the same text).
func checkSameRefusal(t *testing.T, f call.Field, cerr, jerr error) {
	t.Helper()
	if cerr == nil || jerr == nil {
		t.Fatalf("flag %v, JSON %v: want both refused or neither", cerr, jerr)
	}
	var cfe, jfe *strictjson.FieldError
	if !errors.As(cerr, &cfe) || !errors.As(jerr, &jfe) {
		// A refusal of no field (an approval denied): the same text.
		if cerr.Error() != jerr.Error() {
			t.Errorf("flag %q, JSON %q: want the same refusal", cerr, jerr)
		}
		return
	}
	jkey, _, _ := strings.Cut(jfe.Field, "[")
	g, ok := call.FieldByKey(jkey)
	if !ok {
		if cerr.Error() != jerr.Error() && runtime.GOOS == "linux" {
			t.Errorf("a refusal about %s: flag %q, JSON %q", jfe.Field, cerr, jerr)
		}
		return
	}
	if g.Key != f.Key {
		t.Logf("refused for %s, which the case of %s sets too", g.Key, f.Key)
	}
	if name, _, _ := strings.Cut(cfe.Field, "["); name != g.Name(call.CLI) {
		t.Errorf("flag error names %q, want %q: %v", cfe.Field, g.Name(call.CLI), cerr)
	}
	if strings.Contains(cerr.Error(), "additional_permissions") || strings.Contains(cerr.Error(), "sandbox_mode") {
		t.Errorf("flag error speaks JSON: %v", cerr)
	}
}

// checkRetryRoundTrip: a write denied outside the roots gets a retry whose
// argv and JSON, read back by their front ends, are the same request.
func checkRetryRoundTrip(t *testing.T, cp, jp *call.Prepared, fs *flagSet, args []string, raw []byte, out string) {
	t.Helper()
	denials := []report.Denial{{Operation: "create", Path: filepath.Join(out, "new"), Reason: "outside the writable roots"}}
	ch := cp.Retry(denials, call.Failed, call.RetryForm{CommandLine: retryCommandLine("run", fs.FlagSet, args)})
	jh := jp.Retry(denials, call.Failed, call.RetryForm{Request: raw})
	if (ch == nil) != (jh == nil) {
		t.Fatalf("retry: flag %+v, JSON %+v", ch, jh)
	}
	if ch == nil || !ch.Helps() {
		return
	}
	t.Logf("retry: %q", ch.Argv)
	cr, _, cerr := cliRequest(ch.Argv[2:])
	b, err := json.Marshal(jh.Request)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	jr, _, jerr := jsonRequest(m)
	if cerr != nil || jerr != nil {
		t.Fatalf("retry read back: flag %v (%q), JSON %v (%s)", cerr, ch.Argv, jerr, b)
	}
	type view struct {
		Mode          profiles.Mode
		WritableRoots []string
		Additional    profiles.Profile
		Network       bool
		SP            profiles.SandboxPermissions
		Target        profiles.Mode
		CapAdd        []string
	}
	see := func(r call.Request) view {
		add, _ := r.Additional.Normalize(r.Cwd)
		if r.Network {
			// --network is the caller's own under use_default, as
			// network_access is; under with_additional_permissions
			// Prepare makes both a request.
			add = profiles.Merge(add, profiles.New(profiles.FullNetwork(), nil, nil))
		}
		return view{r.Mode, r.WritableRoots, add, false, r.Escalation.SandboxPermissions, r.Escalation.Target, r.CapAdd}
	}
	if cv, jv := see(cr), see(jr); !reflect.DeepEqual(cv, jv) {
		t.Errorf("retry argv %q and JSON %s differ:\n%+v\nvs %+v", ch.Argv, b, cv, jv)
	}
}

// TestFlagErrorsSpeakFlags: an error of a field the CLI set names the flag,
// not the JSON key (sbx run --allow-write said
// "additional_permissions: file_system.write[0]: ..."; issue 28 §1).
func TestFlagErrorsSpeakFlags(t *testing.T) {
	ws := t.TempDir()
	missing := filepath.Join(ws, "missing")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--cwd", ws, "--allow-write", missing, "--", "true"}, "sbx run: --allow-write[0]: "},
		{[]string{"run", "--cwd", ws, "--mode", "danger-full-access", "--writable-root", "/nonexistent", "--", "true"}, "sbx run: --writable-root: only valid with --mode workspace-write"},
		{[]string{"run", "--cwd", ws, "--read-only", "x", "--", "true"}, "sbx run: --read-only: a carve-out of writable roots: read-only has none (use --mode workspace-write or --allow-write)"},
		{[]string{"explain", "--cwd", ws, "--allow-read", missing, "--", "true"}, "sbx explain: --allow-read[0]: "},
	} {
		code, out := sbxMain(t, tt.args...)
		if code != ExitRefused || !strings.HasPrefix(out, tt.want) || strings.Contains(out, "additional_permissions") {
			t.Errorf("%q: exit %d, %q; want 125 and %q", tt.args, code, out, tt.want)
		}
	}
	// Allowed: the same flags where they mean something.
	if code, out := sbxMain(t, "run", "--cwd", ws, "--allow-write", ws, "--", "true"); code != 0 {
		t.Errorf("--allow-write of an existing directory: exit %d, %s", code, out)
	}
}

// TestRowFlagsBound: each row of the request table with a flag is a flag of
// sbx run, named from the table, and no binding is left without a row.
func TestRowFlagsBound(t *testing.T) {
	var rf runFlags
	binds := rf.rowFlags()
	fs := newFlagSet("run", runUsage, Stdio{Err: io.Discard})
	rf.register(fs.FlagSet)
	n := 0
	for _, f := range call.Fields {
		if f.Flag == "" {
			continue
		}
		n++
		if _, ok := rf.pathValues()[f.Key]; ok != (f.Kind == strictjson.KindPath) {
			t.Errorf("row %s: kind %q, but pathValues has it: %v", f.Key, f.Kind, ok)
		}
		fl := fs.Lookup(f.Flag)
		if _, ok := binds[f.Key]; !ok || fl == nil {
			t.Errorf("row %s: flag --%s not registered", f.Key, f.Flag)
			continue
		}
		// A list is a repeatable flag; any other flag may be given once.
		if _, rep := fl.Value.(interface{ repeatable() }); rep != f.List {
			t.Errorf("row %s: --%s repeatable %v, but the row's List is %v", f.Key, f.Flag, rep, f.List)
		}
		// A switch is a flag without a value.
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); (ok && b.IsBoolFlag()) != f.Switch {
			t.Errorf("row %s: --%s is a bool flag: %v, but the row's Switch is %v", f.Key, f.Flag, ok && b.IsBoolFlag(), f.Switch)
		}
	}
	if n != len(binds) {
		t.Errorf("%d bindings for %d rows with a flag", len(binds), n)
	}
}
