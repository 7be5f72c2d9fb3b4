package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"sbx/enforce"
	"sbx/enforce/host"
	"sbx/escalate"
	"sbx/policy"
	"sbx/profiles"
	"sbx/shells"
)

// request is one call, from `sbx run` flags or `sbx exec` JSON.
type request struct {
	Command []string
	// Shell, when set, makes Command from a shell kind and a script.
	Shell         *shells.Spec
	Cwd           string
	Mode          profiles.Mode
	WritableRoots []string
	ExcludeTmp    bool
	ExcludeTmpdir bool
	ReadOnly      []string
	Network       bool
	Additional    profiles.Profile
	// Preauthorized marks Additional as the caller's own configuration
	// (sbx run's --allow-* flags, sbx exec's "preauthorized": true), which
	// needs no approval under use_default. Without it, additional
	// permissions under use_default are refused: a runtime that forwards a
	// model's arguments verbatim must not get unapproved permissions.
	Preauthorized bool
	// Env is sbx's own environment; EnvPolicy makes the command's from it.
	Env       []string
	EnvPolicy profiles.EnvPolicy
	Timeout   time.Duration
	Limits    enforce.Limits
	Require   []string
	// CapAdd are Linux capabilities the command keeps; CapAddField names
	// them in errors (--cap-add, cap_add).
	CapAdd      []string
	CapAddField string
	Escalation  escalation
	// KillGrace is the time between a relayed SIGTERM and the kill (0:
	// host.DefaultKillGrace).
	KillGrace time.Duration
}

// errNotFound marks a command that could not be resolved (exit 127).
var errNotFound = errors.New("command not found")

// prepare validates r and turns it into a host.Call. Every error names the
// field at fault; nothing has been run or created when it returns one.
func prepare(r request) (host.Call, callReport, error) {
	if r.Shell != nil {
		if len(r.Command) > 0 {
			return host.Call{}, callReport{}, &profiles.FieldError{Field: "shell", Err: errors.New("give a command or a shell script, not both")}
		}
		argv, err := shells.Command(*r.Shell, func(name string) (string, error) {
			return lookPath(name, "/", lookupEnv(r.Env, "PATH"))
		})
		if err != nil {
			return host.Call{}, callReport{}, &profiles.FieldError{Field: "shell", Err: err}
		}
		r.Command = argv
	}
	if len(r.Command) == 0 || r.Command[0] == "" {
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "command", Err: errors.New("empty command")}
	}
	for _, f := range r.Require {
		if !slices.Contains(enforce.Features, f) {
			return host.Call{}, callReport{}, &profiles.FieldError{Field: "require", Err: fmt.Errorf("unknown feature %q (known: %s)", f, strings.Join(enforce.Features, ", "))}
		}
	}
	if err := r.Limits.Validate(); err != nil {
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "limits", Err: err}
	}
	cwd, err := resolveCwd(r.Cwd)
	if err != nil {
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "cwd", Err: err}
	}
	env, envRep, err := r.EnvPolicy.Apply(r.Env)
	if err != nil {
		return host.Call{}, callReport{}, err
	}
	explicit, err := r.Additional.Normalize(cwd)
	if err != nil {
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "additional_permissions", Err: err}
	}
	// Under use_default, additional permissions marked preauthorized are
	// the caller's own configuration, not a request that needs approval;
	// unmarked, they are refused (Codex: they require
	// with_additional_permissions).
	var preauth profiles.Profile
	if r.Network {
		preauth = profiles.Build(true, nil, nil)
	}
	switch {
	case r.Escalation.SandboxPermissions == profiles.UseDefault && !explicit.IsEmpty() && !r.Preauthorized:
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "additional_permissions", Err: fmt.Errorf(`%w (sandbox_permissions is use_default; mark them "preauthorized": true if they are the caller's own, not a model's)`, escalate.ErrStrayProfile)}
	case r.Escalation.SandboxPermissions == profiles.UseDefault:
		preauth, explicit = profiles.Merge(preauth, explicit), profiles.Profile{}
	case r.Preauthorized && !explicit.IsEmpty():
		return host.Call{}, callReport{}, &profiles.FieldError{Field: "preauthorized", Err: fmt.Errorf("only with sandbox_permissions use_default (sandbox_permissions is %s: its additional_permissions are a request)", r.Escalation.SandboxPermissions)}
	}
	caps, err := capabilities(r.CapAdd, r.CapAddField)
	if err != nil {
		return host.Call{}, callReport{}, err
	}
	base := policy.Request{
		Mode: r.Mode, Cwd: cwd, WritableRoots: r.WritableRoots,
		ExcludeTmp: r.ExcludeTmp, ExcludeTmpdir: r.ExcludeTmpdir, Tmpdir: lookupEnv(env, "TMPDIR"),
		ExtraReadOnly: r.ReadOnly, Capabilities: caps,
	}
	pol, perms, err := resolvePermissions(context.Background(), base, explicit, preauth, r.Escalation)
	meta := callReport{Report: enforce.NewReport(perms.Mode.String()), Permissions: perms, Env: envRep}
	if err != nil {
		return host.Call{}, meta, err
	}
	if err := checkArgSize(r.Command, env); err != nil {
		return host.Call{}, meta, err
	}
	path, err := lookPath(r.Command[0], cwd, lookupEnv(env, "PATH"))
	if err != nil {
		call := host.Call{Policy: pol, Require: r.Require, Limits: r.Limits}
		if enf, down, derr := host.Describe(call); derr == nil {
			meta.Enforcement = enf
			meta.Degraded = append(meta.Degraded, down...)
		}
		return call, meta, err
	}
	return host.Call{
		Policy:    pol,
		Cmd:       host.Cmd{Path: path, Argv: r.Command, Dir: cwd, Env: env},
		Require:   r.Require,
		Timeout:   r.Timeout,
		KillGrace: r.KillGrace,
		Limits:    r.Limits,
	}, meta, nil
}

func resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s does not exist", abs)
	case err != nil:
		return "", err
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// lookPath resolves name the way a shell would, with the command's PATH.
func lookPath(name, cwd, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s", errNotFound, name)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNotFound, name)
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// describeStart turns an exec refused with E2BIG into a refusal of the
// call's input: the arguments and environment are too large for the
// kernel, which is bad input (125), not a command that cannot be executed
// (126, the shell's reading of a failed exec). The error it returns no
// longer matches host.ErrStart, so exitStatusFor makes it 125 on every
// platform. Other errors pass unchanged.
func describeStart(err error, cmd host.Cmd) error {
	if !errors.Is(err, syscall.E2BIG) {
		return err
	}
	return argsTooBig(cmd.Argv, cmd.Env)
}

// checkArgSize refuses, before anything is made for the call, arguments or
// environment that Linux's execve would refuse with E2BIG whatever the
// stack limit: one string longer than MAX_ARG_STRLEN (32 pages). The exec
// itself may happen in the stage, whose failure would only be an exit
// status. The total (a quarter of the stack limit) is left to the exec.
func checkArgSize(argv, env []string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	for _, s := range slices.Concat(argv, env) {
		if len(s) >= 32*os.Getpagesize() {
			return argsTooBig(argv, env)
		}
	}
	return nil
}

func argsTooBig(argv, env []string) error {
	total, longest := 0, 0
	for _, s := range slices.Concat(argv, env) {
		total += len(s) + 1
		longest = max(longest, len(s))
	}
	limit := "a quarter of the stack limit in all"
	if longest >= 32*os.Getpagesize() {
		limit = fmt.Sprintf("at most %d bytes per string", 32*os.Getpagesize()-1)
	}
	return fmt.Errorf("command, env: the command's arguments and environment exceed the kernel's limit (E2BIG): %d bytes in all, the longest string %d bytes (Linux takes %s)", total, longest, limit)
}

// exitStatusFor maps a failure before or at start to an exit status.
func exitStatusFor(err error) int {
	switch {
	case errors.Is(err, errNotFound):
		return 127
	case errors.Is(err, host.ErrStart):
		return 126
	}
	return ExitRefused
}

// callReport is the report of `sbx run --report` and the core of the
// `sbx exec` result: what was enforced plus where the permissions came from.
type callReport struct {
	// SchemaVersion is SchemaVersion, first in every report and result.
	SchemaVersion schemaVersion `json:"schema_version"`
	// CallID echoes the call_id of an `sbx exec` request.
	CallID string `json:"call_id,omitempty"`
	enforce.Report
	Permissions permissionsReport `json:"permissions"`
	// Env names what the environment policy stripped and set (never values).
	Env profiles.EnvReport `json:"env"`
	// Retry is the exact-retry hint when the sandbox denied something.
	Retry *retryHint `json:"retry,omitempty"`
}

// capabilities checks the capabilities a call keeps: Linux names, and only
// for root, whose command otherwise holds none (the stage of an
// unprivileged call gets only those it needs itself).
func capabilities(names []string, field string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	caps, err := enforce.CanonicalCapabilities(names)
	if err != nil {
		return nil, &profiles.FieldError{Field: field, Err: err}
	}
	switch {
	case runtime.GOOS != "linux":
		return nil, &profiles.FieldError{Field: field, Err: errors.New("capabilities are Linux's")}
	case os.Geteuid() != 0:
		return nil, &profiles.FieldError{Field: field, Err: errors.New("keeping a capability needs sbx run as root")}
	}
	return caps, nil
}
