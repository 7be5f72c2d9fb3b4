package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// listFlag is a repeatable string flag; every other flag may be given once
// (see flagSet.parse).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
func (l *listFlag) repeatable()        {}

// timeoutFlag parses a duration, saying the accepted range when it cannot
// (the flag package's own says only "parse error"); the range itself is
// checked with the other fields in request.
type timeoutFlag struct{ d *time.Duration }

func (f timeoutFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}
func (f timeoutFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not a duration from 1ns to %dh (examples: 30s, 5m, 2h)", int64(report.MaxTimeout/time.Hour))
	}
	*f.d = d
	return nil
}

// sizeFlag parses a byte size with an optional K/M/G/T suffix.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil || *f.n == 0 {
		return ""
	}
	return strconv.FormatInt(*f.n, 10)
}
func (f sizeFlag) Set(v string) error {
	n, err := report.ParseSize(v)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// modeFlag parses a sandbox mode at flag time so a bad value is a flag error.
type modeFlag struct{ m *profiles.Mode }

func (f modeFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}
func (f modeFlag) Set(v string) error {
	m, err := profiles.ParseMode(v)
	if err != nil {
		return err
	}
	*f.m = m
	return nil
}

// runFlags are the flags that shape a call; `sbx explain` shares them.
type runFlags struct {
	mode             profiles.Mode
	cwd              string
	writableRoots    listFlag
	allowRead        listFlag
	allowWrite       listFlag
	readOnly         listFlag
	protect          listFlag
	noDefaultProtect bool
	network          bool
	allowDomain      listFlag
	denyDomain       listFlag
	allowPrivate     bool
	resolve          listFlag
	tools            listFlag
	excludeTmp       bool
	excludeTmpdir    bool
	retryOnSuccess   bool
	require          listFlag
	capAdd           listFlag
	shell            string
	script           string
	login            bool
	envMode          string
	envAllow         listFlag
	setenv           listFlag
	limits           report.Limits
	timeout          time.Duration
	killGrace        time.Duration

	sandboxPermissions string
	escalateTo         string
	justification      string
	approvalPolicy     string
	approver           string
	guard              string
	preset             string
	grants             string
	strictReview       bool
}

// register defines the run flags on fs. The flags of the request table's
// rows take their names from it (call.Fields): rowFlags binds each row to
// its value here and its help text, and a row without a binding, or a
// binding without a row, is a programming error TestFieldTable finds.
func (rf *runFlags) register(fs *flag.FlagSet) {
	binds := rf.rowFlags()
	for _, f := range call.Fields {
		if bind, ok := binds[f.Key]; ok && f.Flag != "" {
			bind(fs, f.Flag)
		}
	}
	fs.StringVar(&rf.approver, "approver", "", "approver program `CMD` (request JSON on stdin, answer JSON on stdout); default: ask on the terminal")
	fs.StringVar(&rf.grants, "grants", "", "sticky grants `FILE`: JSON {\"session\": profile, \"turn\": profile, \"turn_strict\": bool}, as sbx exec's grants; what they cover needs no approval")
	fs.BoolVar(&rf.strictReview, "strict-review", false, "send every escalation to the approver, even one --grants covers (the turn grant's strict_auto_review; needs --grants)")
	fs.StringVar(&rf.preset, "preset", "", "preset `KEY` setting mode and approval policy (see sbx presets)")
}

// rowFlags are the bindings of the request table's rows to runFlags, by
// JSON key: the value a flag sets and its help text.
func (rf *runFlags) rowFlags() map[string]func(fs *flag.FlagSet, name string) {
	return map[string]func(fs *flag.FlagSet, name string){
		"sandbox_mode": func(fs *flag.FlagSet, name string) {
			fs.Var(modeFlag{&rf.mode}, name, "sandbox mode: read-only, workspace-write or danger-full-access")
		},
		"cwd": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.cwd, name, "", "working directory of the command (default: the current directory)")
		},
		"writable_roots": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.writableRoots, name, "extra writable directory in workspace-write (repeatable)")
		},
		"additional_permissions.file_system.read": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.allowRead, name, "additional readable path (repeatable)")
		},
		"additional_permissions.file_system.write": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.allowWrite, name, "additional writable path; must exist (repeatable)")
		},
		"read_only": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.readOnly, name, "extra read-only carve-out `PATH` inside writable roots, besides the protected names (repeatable)")
		},
		"protect": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.protect, name, "keep `NAME` read-only in every writable root, as "+strings.Join(policy.DefaultProtected, ", ")+" are by default; a missing one cannot be created (repeatable)")
		},
		"no_default_protect": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.noDefaultProtect, name, false, "do not protect "+strings.Join(policy.DefaultProtected, ", ")+" (the report's policy.protected_names says what is)")
		},
		"network_access": func(fs *flag.FlagSet, name string) { fs.BoolVar(&rf.network, name, false, "allow network access") },
		"tools": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.tools, name, "opt into the smallest profile with which `TOOL` works: its cache directories writable (made when missing), its registry domains through the proxy (repeatable; go, npm, pip, cargo, ...: docs/json.md)")
		},
		"additional_permissions.network.allowed_domains": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.allowDomain, name, "allow network to `PATTERN` only, through sbx's proxy: host, *.domain (subdomains only), optional :PORT (default 80 and 443) (repeatable; docs/network.md)")
		},
		"additional_permissions.network.denied_domains": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.denyDomain, name, "refuse `PATTERN` even when --allow-domain matches it; beside --network, every host but PATTERN through the proxy (repeatable)")
		},
		"additional_permissions.network.allow_private_addresses": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.allowPrivate, name, false, "let --allow-domain hosts resolve to loopback, link-local and private addresses")
		},
		"resolve": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.resolve, name, "pin `HOST:PORT:ADDR` for the proxy, as curl's --resolve (repeatable; with --allow-domain)")
		},
		"exclude_tmp": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.excludeTmp, name, false, "do not make /tmp writable in workspace-write")
		},
		"exclude_tmpdir": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.excludeTmpdir, name, false, "do not make $TMPDIR writable in workspace-write")
		},
		"sandbox_permissions": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.sandboxPermissions, name, "", "per-call escalation: use_default, with_additional_permissions (the --allow-* flags become a request needing approval) or require_escalated")
		},
		"escalate_to": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.escalateTo, name, "", "ask to run this call in a wider `MODE` (implies --sandbox-permissions require_escalated)")
		},
		"justification": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.justification, name, "", "why the call needs more than its standing mode (required with an escalation)")
		},
		"approval_policy": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.approvalPolicy, name, "", "never, on-request, on-failure, untrusted, or Codex's granular policy as granular:CATEGORY,... naming the categories allowed (sandbox_approval, rules, skill_approval, request_permissions, mcp_elicitations) (default on-request; only on-request and granular with sandbox_approval ask: the others deny an escalation no grant covers without asking)")
		},
		"guard": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.guard, name, "", "deployment guard `FILE` (default "+escalate.DefaultGuardPath+" when it exists)")
		},
		"shell.kind": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.shell, name, "", "run the -c script with this shell: bash, sh, zsh, pwsh, powershell or cmd (no profile files unless --login)")
		},
		"shell.script": func(fs *flag.FlagSet, name string) { fs.StringVar(&rf.script, name, "", "the script for --shell") },
		"shell.login": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.login, name, false, "run --shell as a login shell (reads its profile files)")
		},
		"env_policy.mode": func(fs *flag.FlagSet, name string) {
			fs.StringVar(&rf.envMode, name, "inherit", "environment of the command: inherit (minus secret-looking names: "+strings.Join(profiles.SecretPatterns, " ")+", the name segments "+strings.Join(profiles.SecretSegments, " ")+", URL values with a password; docs/env.md), clean, or allow-list")
		},
		"env_policy.allow": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.envAllow, name, "variable name or glob to keep (allow-list mode, or a secret-looking name in inherit mode; repeatable)")
		},
		"env": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.setenv, name, "set `NAME=VALUE` for the command (repeatable; never stripped)")
		},
		"limits.memory_bytes": func(fs *flag.FlagSet, name string) {
			fs.Var(sizeFlag{&rf.limits.MemoryBytes}, name, "memory limit of the whole command tree, e.g. 512M or 2G (cgroup; per-process RLIMIT_AS where no cgroup is writable)")
		},
		"limits.pids": func(fs *flag.FlagSet, name string) {
			fs.IntVar(&rf.limits.Pids, name, 0, "limit on processes and threads of the command tree, 1 to 4194304 (cgroup; RLIMIT_NPROC in the call's user namespace as fallback)")
		},
		"limits.cpus": func(fs *flag.FlagSet, name string) {
			fs.Float64Var(&rf.limits.CPUs, name, 0, "CPU bandwidth quota in cores, e.g. 0.5: from 0.01 to 4 × the number of CPUs (cgroup only)")
		},
		"timeout_ms": func(fs *flag.FlagSet, name string) {
			fs.Var(timeoutFlag{&rf.timeout}, name, "kill the command tree after this `DURATION` (e.g. 30s, 5m; at most 8760h)")
		},
		"kill_grace_ms": func(fs *flag.FlagSet, name string) {
			fs.DurationVar(&rf.killGrace, name, host.DefaultKillGrace, "time between relaying SIGTERM or SIGHUP (or sbx's parent dying) and killing the command tree, `DURATION` at most 1h")
		},
		"cap_add": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.capAdd, name, "keep Linux capability `CAP` for the command (repeatable; root only, reported): every other one is dropped, root's included")
		},
		"retry_on_success": func(fs *flag.FlagSet, name string) {
			fs.BoolVar(&rf.retryOnSuccess, name, false, "give the report's retry even when the call succeeded (exit 0; sbx fs: the change made): by default its denials, which did not fail it, are listed as tolerated, with no retry")
		},
		"require": func(fs *flag.FlagSet, name string) {
			fs.Var(&rf.require, name, "fail with 125 instead of running when FEATURE cannot be enforced (repeatable; "+strings.Join(report.FeatureNames(), ", ")+")")
		},
	}
}

// checkPaths holds the flags of the table's path rows (call.Fields, kind
// strictjson.KindPath) and --grants, a file of the CLI's own, to the rule of
// their kind: `--cwd ""` would otherwise run in sbx's own directory and make
// it writable. (A NUL cannot reach a flag: argv is C strings.)
func (rf *runFlags) checkPaths(set map[string]bool) error {
	values := rf.pathValues()
	// A list row's error names which value, as every other check of a
	// repeated flag does (--protect[1]).
	check := func(name string, vs []string, list bool) error {
		for i, v := range vs {
			if err := strictjson.CheckString(strictjson.KindPath, v); err != nil {
				field := "--" + name
				if list {
					field = fmt.Sprintf("%s[%d]", field, i)
				}
				return &strictjson.FieldError{Field: field, Err: err}
			}
		}
		return nil
	}
	for _, f := range call.Fields {
		if f.Kind != strictjson.KindPath || f.Flag == "" || !set[f.Flag] {
			continue
		}
		if err := check(f.Flag, values[f.Key], f.List); err != nil {
			return err
		}
	}
	if set["grants"] {
		return check("grants", []string{rf.grants}, false)
	}
	return nil
}

// pathValues are the values of the path rows' flags, by the row's key
// (TestRowFlagsBound checks that every path row with a flag has one).
func (rf *runFlags) pathValues() map[string][]string {
	return map[string][]string{
		"cwd": {rf.cwd}, "writable_roots": rf.writableRoots, "additional_permissions.file_system.read": rf.allowRead,
		"additional_permissions.file_system.write": rf.allowWrite, "read_only": rf.readOnly, "protect": rf.protect,
		"guard": {rf.guard},
	}
}
