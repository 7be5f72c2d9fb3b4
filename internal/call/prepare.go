package call

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/netproxy"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// ErrNotFound marks a command that could not be resolved (exit 127).
var ErrNotFound = errors.New("command not found")

// Prepared is a call decided and ready to run: everything Prepare worked
// out, once, for the run, the report and the retry.
type Prepared struct {
	// Request is the request normalised: Command made from Shell, Cwd
	// absolute, Additional normalised against it (the call's own profile,
	// as given, before use_default folds it into the preauthorised one).
	Request Request
	// Call is what host.Run runs. Its Policy is the final policy, after
	// the guard; on ErrNotFound it has no Cmd.
	Call host.Call
	// Permissions says where each permission came from.
	Permissions Permissions
	// Env names what the environment policy stripped and set.
	Env profiles.EnvReport
	// Report is the report before the run: the mode, and on ErrNotFound
	// what would have been enforced.
	Report report.Report
	// Guard is the deployment guard, loaded once; the retry reads it too.
	Guard escalate.Guard
	// gitWatch are the files of a granted .git that must not appear
	// (policy.GitAppeared): SettleGitGrant removes them after the call.
	gitWatch []gitWatch
}

// Policy is the final policy the call runs with.
func (p *Prepared) Policy() policy.Policy { return p.Call.Policy }

// shownCommand is the argv an approval shows: the request's command when
// it is what runs. A shell spec makes the argv run another one, and an fs
// change's argv is its stage's: nothing is shown rather than a guess.
func shownCommand(r Request) []string {
	if r.Shell != nil || r.Escalation.Tool == "fs" || len(r.Command) == 0 {
		return nil
	}
	return r.Command
}

// Prepare validates r and decides the call: normalisation, grants, the
// ladder and approval (fail closed; SIGINT or SIGTERM while the approver
// is asked settles it cancelled), the guard, and path resolution. Every
// error names the field at fault; nothing has been run or created when it
// returns one. On ErrNotFound (the command does not resolve) it returns
// the Prepared call too, without a command, for the report.
func Prepare(ctx context.Context, r Request) (*Prepared, error) {
	r.Escalation.Command = shownCommand(r)
	if r.Shell != nil {
		if len(r.Command) > 0 {
			return nil, &strictjson.FieldError{Field: "shell", Err: errors.New("give a command or a shell script, not both")}
		}
		argv, err := shells.Command(*r.Shell, func(name string) (string, error) {
			return lookPath(name, "/", lookupEnv(r.Env, "PATH"))
		})
		if err != nil {
			return nil, &strictjson.FieldError{Field: "shell", Err: err}
		}
		r.Command, r.Shell = argv, nil
	}
	if len(r.Command) == 0 || r.Command[0] == "" {
		return nil, &strictjson.FieldError{Field: "command", Err: errors.New("empty command")}
	}
	if err := r.checkStrings(); err != nil {
		return nil, err
	}
	if err := r.checkEffect(); err != nil {
		return nil, err
	}
	if r.Escalation.SandboxPermissions == profiles.WithAdditionalPermissions && r.Network {
		// Under with_additional_permissions the network is part of the
		// request the approver sees, whichever front end set it (Codex:
		// network access is an additional permission like a path), not
		// the caller's own setting; a request for the network alone is
		// valid. Grants, which the runtime applies afterwards, ask no one.
		r.Network = false
		r.Additional = profiles.Merge(r.Additional, profiles.New(profiles.FullNetwork(), nil, nil))
	}
	require, err := parseRequire(r.Require)
	if err != nil {
		return nil, err
	}
	if err := r.Limits.Validate(); err != nil {
		return nil, &strictjson.FieldError{Field: "limits", Err: err}
	}
	cwd, err := ResolveCwd(r.Cwd)
	if err != nil {
		return nil, &strictjson.FieldError{Field: "cwd", Err: err}
	}
	r.Cwd = cwd
	env, envRep, err := r.EnvPolicy.Apply(r.Env)
	if err != nil {
		return nil, err
	}
	explicit, err := r.Additional.Normalize(cwd)
	if err != nil {
		return nil, &strictjson.FieldError{Field: "additional_permissions", Err: err}
	}
	r.Additional = explicit
	preauth, explicit, err := preauthorized(r, explicit)
	if err != nil {
		return nil, err
	}
	toolProfile, err := ToolProfile(r.Tools, env, cwd)
	if err != nil {
		return nil, err
	}
	preauth = profiles.Merge(preauth, toolProfile)
	caps, err := capabilities(r.CapAdd, r.CapAddField)
	if err != nil {
		return nil, err
	}
	// Keeping a capability widens the call: only the caller's own
	// configuration (preauthorized, under use_default: sbx run's
	// --cap-add, or "preauthorized": true) keeps one without being asked.
	r.Escalation.CapAdd = nil
	if !(r.Preauthorized && r.Escalation.SandboxPermissions == profiles.UseDefault) {
		r.Escalation.CapAdd = caps
	}
	// Checked here, where the caller's field name is known; policy.Build
	// checks again for its other callers.
	if _, err := policy.ProtectedNames(r.Protect, r.NoDefaultProtect, cmp.Or(r.ProtectField, "protect")); err != nil {
		return nil, err
	}
	base := policy.Request{
		Mode: r.Mode, Cwd: cwd, WritableRoots: r.WritableRoots,
		ExcludeTmp: r.ExcludeTmp, ExcludeTmpdir: r.ExcludeTmpdir, Tmpdir: lookupEnv(env, "TMPDIR"),
		ExtraCarveOuts: r.CarveOuts, Protect: r.Protect, NoDefaultProtect: r.NoDefaultProtect, Capabilities: caps, Resolve: r.Resolve,
	}
	r.Escalation.Env = env
	pol, perms, guard, err := resolvePermissions(ctx, base, explicit, preauth, r.Escalation)
	if err != nil {
		return nil, err
	}
	// A pin where no proxy runs was refused before anyone was asked
	// (decide), on the policy the call would run with.
	if pol.Domains != nil {
		// The launcher sets them (the port is known only once its
		// listener is made) over any of the caller's.
		envRep.Set = mergeNames(envRep.Set, netproxy.EnvNames())
	}
	perms.Tools = r.Tools
	p := &Prepared{Request: r, Permissions: perms, Env: envRep, Report: report.NewReport(perms.Mode.String()), Guard: guard,
		gitWatch: watchGit(pol)}
	if err := checkArgSize(r.Command, env); err != nil {
		return nil, err
	}
	path, err := lookPath(r.Command[0], cwd, lookupEnv(env, "PATH"))
	if err != nil {
		p.Call = host.Call{Policy: pol, Require: require, Limits: r.Limits}
		if enf, down, derr := host.Describe(p.Call); derr == nil {
			p.Report.Enforcement = enf
			p.Report.Degraded = append(p.Report.Degraded, down...)
		}
		return p, err
	}
	p.Call = host.Call{
		Policy:    pol,
		Cmd:       enforce.Command{Path: path, Argv: r.Command, Dir: cwd, Env: env},
		Require:   require,
		Timeout:   r.Timeout,
		KillGrace: r.KillGrace,
		Limits:    r.Limits,
	}
	return p, nil
}

// preauthorized splits the call's normalised profile explicit into what
// needs no approval (preauth: --network, and under use_default
// additional permissions marked preauthorized, the caller's own
// configuration) and what is a request (the rest). Unmarked additional
// permissions under use_default are refused (Codex: they require
// with_additional_permissions).
func preauthorized(r Request, explicit profiles.Profile) (preauth, request profiles.Profile, err error) {
	if r.Network {
		preauth = profiles.New(profiles.FullNetwork(), nil, nil)
	}
	switch {
	case r.Escalation.SandboxPermissions == profiles.UseDefault && !explicit.IsEmpty() && !r.Preauthorized:
		return preauth, explicit, &strictjson.FieldError{Field: "additional_permissions", Err: fmt.Errorf(`%w (sandbox_permissions is use_default; mark them "preauthorized": true if they are the caller's own, not a model's)`, escalate.ErrStrayProfile)}
	case r.Escalation.SandboxPermissions == profiles.UseDefault:
		return profiles.Merge(preauth, explicit), profiles.Profile{}, nil
	case r.Preauthorized && !explicit.IsEmpty():
		return preauth, explicit, &strictjson.FieldError{Field: "preauthorized", Err: fmt.Errorf("only with sandbox_permissions use_default (sandbox_permissions is %s: its additional_permissions are a request)", r.Escalation.SandboxPermissions)}
	}
	return preauth, explicit, nil
}

// ResolveCwd makes cwd absolute ("" is the current directory) and checks
// that it is a directory.
func ResolveCwd(cwd string) (string, error) {
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
			return "", fmt.Errorf("%w: %s", ErrNotFound, name)
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
	return "", fmt.Errorf("%w: %s", ErrNotFound, name)
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// StartError turns an exec refused with E2BIG into a refusal of the
// call's input: the arguments and environment are too large for the
// kernel, which is bad input (125), not a command that cannot be executed
// (126, the shell's reading of a failed exec). The error it returns no
// longer matches host.ErrStart, so the CLI makes it 125 on every
// platform. Other errors pass unchanged.
func StartError(err error, cmd enforce.Command) error {
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

// capabilities checks the capabilities a call keeps: Linux names, and only
// for root, whose command otherwise holds none (the stage of an
// unprivileged call gets only those it needs itself).
func capabilities(names []string, field string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	caps, err := enforce.CanonicalCapabilities(names)
	if err != nil {
		return nil, &strictjson.FieldError{Field: field, Err: err}
	}
	switch {
	case runtime.GOOS != "linux":
		return nil, &strictjson.FieldError{Field: field, Err: errors.New("capabilities are Linux's")}
	case os.Geteuid() != 0:
		return nil, &strictjson.FieldError{Field: field, Err: errors.New("keeping a capability needs sbx run as root")}
	}
	return caps, nil
}

// mergeNames returns the sorted union of a and b.
func mergeNames(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// parseRequire reads the features a call requires (--require, "require"),
// refusing a name no backend reports.
func parseRequire(names []string) ([]report.Feature, error) {
	var out []report.Feature
	for _, s := range names {
		f, ok := report.ParseFeature(s)
		if !ok {
			return nil, &strictjson.FieldError{Field: "require", Err: fmt.Errorf("unknown feature %q (known: %s)", s, strings.Join(report.FeatureNames(), ", "))}
		}
		out = append(out, f)
	}
	return out, nil
}
