package call

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Field is one field of a request, declared once: its name on each front
// end, the rule its strings follow, the modes where it means something, and
// whether it asks for something under with_additional_permissions. The
// CLI's flags, the effect checks of Prepare, the retry's argv and request,
// and the name an error gives are all read from Fields (issue 28 §1).
type Field struct {
	// Key is the JSON key of `sbx exec` (dotted below the top level), and
	// the name an error carries (a FieldError's Field, "[i]" for an
	// element of a list).
	Key string
	// Flag is the `sbx run` flag without its dashes ("" for a field only
	// JSON has, or the command, which follows "--").
	Flag string
	// Kind is the rule of the field's strings (strictjson.CheckString).
	Kind strictjson.StringKind
	// List says the field is a list (a repeatable flag): an error names
	// its element, writable_roots[1] or --writable-root[1].
	List bool
	// Switch says the field is a switch: a flag given without a value
	// (--network), true in JSON.
	Switch bool
	// Effect is where the field means something; outside it, giving the
	// field is refused rather than ignored (checkEffect).
	Effect Effect
	// Request says the field asks for a widening under
	// with_additional_permissions: it is part of what the approver is
	// asked (use_default: the caller's own, preauthorized; grants and
	// retry.grant, which the runtime applies afterwards, ask no one).
	Request bool
	// strings are the field's string values in r, for the kind's rule.
	strings func(r *Request) []string
	// given says whether r sets the field (its zero value is "not given").
	given func(r *Request) bool
}

// Effect is the set of modes in which a field means something.
type Effect int

const (
	// EveryMode: the field means something in every mode.
	EveryMode Effect = iota
	// WorkspaceWriteOnly: the field shapes the writable roots of
	// workspace-write (the standing mode, or the target of an escalation).
	WorkspaceWriteOnly
	// Confined: the field adds to or carves out of a sandbox, and
	// danger-full-access has none (it reads, writes and connects
	// everywhere).
	Confined
	// CarveOut: a Confined field that carves out of writable roots, so
	// the call must have some (workspace-write, or additional writes).
	CarveOut
)

func list(v []string) func(*Request) []string { return func(*Request) []string { return v } }

// Fields is the request table. A field added to Request is added here,
// and TestFieldTable sets each row by flag and by JSON.
var Fields = []Field{
	{Key: "command", List: true, Kind: strictjson.KindToken,
		strings: func(r *Request) []string { return r.Command }, given: func(r *Request) bool { return len(r.Command) > 0 }},
	{Key: "cwd", Flag: "cwd", Kind: strictjson.KindPath,
		strings: func(r *Request) []string { return optional(r.Cwd) }, given: func(r *Request) bool { return r.Cwd != "" }},
	{Key: "sandbox_mode", Flag: "mode", given: func(r *Request) bool { return r.Mode != profiles.ReadOnly }},
	{Key: "writable_roots", List: true, Flag: "writable-root", Kind: strictjson.KindPath, Effect: WorkspaceWriteOnly,
		strings: func(r *Request) []string { return r.WritableRoots }, given: func(r *Request) bool { return len(r.WritableRoots) > 0 }},
	{Key: "exclude_tmp", Switch: true, Flag: "exclude-tmp", Effect: WorkspaceWriteOnly, given: func(r *Request) bool { return r.ExcludeTmp }},
	{Key: "exclude_tmpdir", Switch: true, Flag: "exclude-tmpdir", Effect: WorkspaceWriteOnly, given: func(r *Request) bool { return r.ExcludeTmpdir }},
	{Key: "read_only", List: true, Flag: "read-only", Kind: strictjson.KindPath, Effect: CarveOut,
		strings: func(r *Request) []string { return r.CarveOuts }, given: func(r *Request) bool { return len(r.CarveOuts) > 0 }},
	{Key: "protect", List: true, Flag: "protect", Kind: strictjson.KindPath, Effect: CarveOut,
		strings: func(r *Request) []string { return r.Protect }, given: func(r *Request) bool { return len(r.Protect) > 0 }},
	{Key: "no_default_protect", Switch: true, Flag: "no-default-protect", Effect: CarveOut, given: func(r *Request) bool { return r.NoDefaultProtect }},
	{Key: "network_access", Switch: true, Flag: "network", Effect: Confined, Request: true, given: func(r *Request) bool { return r.Network }},
	{Key: "additional_permissions.file_system.read", List: true, Flag: "allow-read", Kind: strictjson.KindPath, Effect: Confined, Request: true,
		strings: func(r *Request) []string { return fsPaths(r, false) }, given: func(r *Request) bool { return len(fsPaths(r, false)) > 0 }},
	{Key: "additional_permissions.file_system.write", List: true, Flag: "allow-write", Kind: strictjson.KindPath, Effect: Confined, Request: true,
		strings: func(r *Request) []string { return fsPaths(r, true) }, given: func(r *Request) bool { return len(fsPaths(r, true)) > 0 }},
	{Key: "additional_permissions.network.allowed_domains", List: true, Flag: "allow-domain", Effect: Confined, Request: true,
		strings: func(r *Request) []string { return r.Additional.AllowedDomains() }, given: func(r *Request) bool { return len(r.Additional.AllowedDomains()) > 0 }},
	{Key: "additional_permissions.network.denied_domains", List: true, Flag: "deny-domain", Effect: Confined, Request: true,
		strings: func(r *Request) []string { return r.Additional.DeniedDomains() }, given: func(r *Request) bool { return len(r.Additional.DeniedDomains()) > 0 }},
	{Key: "additional_permissions.network.allow_private_addresses", Switch: true, Flag: "allow-private-addresses", Effect: Confined, Request: true,
		given: func(r *Request) bool { return r.Additional.AllowPrivateAddresses() }},
	{Key: "tools", List: true, Flag: "tool", Effect: Confined,
		strings: func(r *Request) []string { return r.Tools }, given: func(r *Request) bool { return len(r.Tools) > 0 }},
	{Key: "resolve", List: true, Flag: "resolve", Effect: Confined,
		strings: func(r *Request) []string { return netrule.Strings(r.Resolve) }, given: func(r *Request) bool { return len(r.Resolve) > 0 }},
	{Key: "require", List: true, Flag: "require",
		strings: func(r *Request) []string { return r.Require }, given: func(r *Request) bool { return len(r.Require) > 0 }},
	{Key: "cap_add", List: true, Flag: "cap-add", Request: true,
		strings: func(r *Request) []string { return r.CapAdd }, given: func(r *Request) bool { return len(r.CapAdd) > 0 }},
	{Key: "call_id", strings: func(r *Request) []string { return optional(r.Escalation.CallID) },
		given: func(r *Request) bool { return r.Escalation.CallID != "" }},
	{Key: "environment_id", strings: func(r *Request) []string { return optional(r.Escalation.EnvironmentID) },
		given: func(r *Request) bool { return r.Escalation.EnvironmentID != "" }},
	{Key: "sandbox_permissions", Flag: "sandbox-permissions",
		given: func(r *Request) bool { return r.Escalation.SandboxPermissions != profiles.UseDefault }},
	{Key: "escalate_to", Flag: "escalate",
		given: func(r *Request) bool { return r.Escalation.SandboxPermissions == profiles.RequireEscalated }},
	{Key: "justification", Flag: "justification", strings: func(r *Request) []string { return optional(r.Escalation.Justification) },
		given: func(r *Request) bool { return r.Escalation.Justification != "" }},
	{Key: "guard", Flag: "guard", Kind: strictjson.KindPath, strings: func(r *Request) []string { return optional(r.Escalation.GuardPath) },
		given: func(r *Request) bool { return r.Escalation.GuardPath != "" }},
	{Key: "approval_policy", Flag: "approval-policy", given: func(r *Request) bool { return r.Escalation.ApprovalPolicy != profiles.ApprovalNever }},
	{Key: "timeout_ms", Flag: "timeout", given: func(r *Request) bool { return r.Timeout != 0 }},
	{Key: "kill_grace_ms", Flag: "kill-grace", given: func(r *Request) bool { return r.KillGrace != 0 }},
	{Key: "limits.memory_bytes", Flag: "memory", given: func(r *Request) bool { return r.Limits.MemoryBytes != 0 }},
	{Key: "limits.pids", Flag: "pids", given: func(r *Request) bool { return r.Limits.Pids != 0 }},
	{Key: "limits.cpus", Flag: "cpus", given: func(r *Request) bool { return r.Limits.CPUs != 0 }},
	{Key: "env_policy.mode", Flag: "env-mode", given: func(r *Request) bool { return r.EnvPolicy.Mode != "" }},
	{Key: "env_policy.allow", List: true, Flag: "env-allow",
		strings: func(r *Request) []string { return r.EnvPolicy.Allow }, given: func(r *Request) bool { return len(r.EnvPolicy.Allow) > 0 }},
	{Key: "env", List: true, Flag: "setenv", // an object: one NAME=VALUE per --setenv
		given: func(r *Request) bool { return len(r.EnvPolicy.Set) > 0 }},
	{Key: "shell.kind", Flag: "shell", given: func(r *Request) bool { return r.Shell != nil }},
	{Key: "shell.script", Flag: "c", given: func(r *Request) bool { return r.Shell != nil }},
	{Key: "shell.login", Switch: true, Flag: "login", given: func(r *Request) bool { return r.Shell != nil && r.Shell.Login }},
	{Key: "retry_on_success", Switch: true, Flag: "retry-on-success", given: func(r *Request) bool { return r.RetryOnSuccess }},
}

// optional is s as a list of one, or none when s is "" (unset: the field's
// own check decides whether it may be left out).
func optional(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func fsPaths(r *Request, write bool) []string {
	if r.Additional.FileSystem == nil {
		return nil
	}
	if write {
		return r.Additional.FileSystem.Write
	}
	return r.Additional.FileSystem.Read
}

// FieldByKey is the row of the JSON key key (without an index).
func FieldByKey(key string) (Field, bool) {
	for _, f := range Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// FieldByFlag is the row of the flag name (without dashes).
func FieldByFlag(name string) (Field, bool) {
	for _, f := range Fields {
		if f.Flag != "" && f.Flag == name {
			return f, true
		}
	}
	return Field{}, false
}

// Front is a front end, which names fields in its own words.
type Front int

const (
	// JSON names a field by its key: additional_permissions.file_system.write[0].
	JSON Front = iota
	// CLI names it by its flag: --allow-write.
	CLI
)

// Name is how front names the field.
func (f Field) Name(front Front) string {
	if front == CLI && f.Flag != "" {
		return flagSpelling(f.Flag)
	}
	return f.Key
}

func flagSpelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// mention is an error text that names other fields: each {key} is written
// in the words of the front end that renders it (Render); its Error is
// JSON's.
type mention struct{ text string }

func (m mention) Error() string { return m.render(JSON) }

func (m mention) render(front Front) string {
	var b strings.Builder
	rest := m.text
	for {
		before, after, ok := strings.Cut(rest, "{")
		if !ok {
			b.WriteString(rest)
			return b.String()
		}
		key, tail, _ := strings.Cut(after, "}")
		b.WriteString(before)
		if f, ok := FieldByKey(key); ok {
			b.WriteString(f.Name(front))
		} else {
			b.WriteString(key)
		}
		rest = tail
	}
}

// Render is err in the words of front: a field error of the call names its
// field as front does (the CLI: the flag; nested names such as
// additional_permissions: file_system.write[0] become --allow-write[0]), and
// the text names other fields the same way. Errors that name no field of
// the table pass unchanged; JSON's rendering is err itself.
func Render(err error, front Front) error {
	if err == nil || front == JSON {
		return err
	}
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || err != error(fe) {
		return err
	}
	// additional_permissions: file_system.write[0]: ... is one field.
	path, inner := fe.Field, fe.Err
	for {
		var next *strictjson.FieldError
		if !errors.As(inner, &next) || inner != error(next) {
			break
		}
		path, inner = path+"."+next.Field, next.Err
	}
	key, index, _ := strings.Cut(path, "[")
	f, ok := FieldByKey(key)
	if !ok {
		if m, isMention := inner.(mention); isMention {
			return &strictjson.FieldError{Field: path, Err: errors.New(m.render(front))}
		}
		return err
	}
	if m, isMention := inner.(mention); isMention {
		inner = errors.New(m.render(front))
	}
	name := f.Name(front)
	if index != "" {
		// The element of a repeated flag: --allow-write[1] is the second.
		name += "[" + index
	}
	return &strictjson.FieldError{Field: name, Err: inner}
}

// checkStrings holds every string of r that becomes a path, an argv element
// or an id to the rule of its kind (strictjson.CheckString), whichever front
// end made r: the JSON decoder and the CLI refuse them first, naming the
// field in their own words; this is for embedders, and for a field a front
// end forgot. Cwd "" is the current directory here (a front end refuses an
// explicit empty one).
func (r Request) checkStrings() error {
	for _, f := range Fields {
		if f.strings == nil {
			continue
		}
		values := f.strings(&r)
		for i, v := range values {
			if err := strictjson.CheckString(f.Kind, v); err != nil {
				field := f.Key
				if f.List {
					field += "[" + strconv.Itoa(i) + "]"
				}
				return &strictjson.FieldError{Field: field, Err: err}
			}
		}
	}
	return nil
}

// checkEffect refuses a field that would change nothing in this call, as
// --pty-size without --pty is: whoever gives one expects it to matter, and
// a call that silently ignores it runs with less (or more) than they meant.
// Both front ends reach it through Prepare, so a field refused as a flag is
// refused as a key. An escalation counts with its target mode for the
// workspace-write fields.
func (r *Request) checkEffect() error {
	e := r.Escalation
	wsWrite := r.Mode == profiles.WorkspaceWrite ||
		e.SandboxPermissions == profiles.RequireEscalated && e.Target == profiles.WorkspaceWrite
	for _, f := range Fields {
		if f.Effect == EveryMode || !f.given(r) {
			continue
		}
		switch {
		case f.Effect == WorkspaceWriteOnly && !wsWrite:
			return &strictjson.FieldError{Field: f.Key, Err: mention{fmt.Sprintf("only valid with {sandbox_mode} workspace-write (this call is %s)", r.Mode)}}
		case r.Mode == profiles.DangerFullAccess:
			return &strictjson.FieldError{Field: f.Key, Err: errors.New("no effect in danger-full-access, which already reads, writes and connects everywhere")}
		case f.Effect == CarveOut && !wsWrite && len(fsPaths(r, true)) == 0:
			return &strictjson.FieldError{Field: f.Key, Err: mention{fmt.Sprintf("a carve-out of writable roots: %s has none (use {sandbox_mode} workspace-write or {additional_permissions.file_system.write})", r.Mode)}}
		}
	}
	return r.checkDomains()
}

// checkDomains refuses the domain rows where no proxy applies them: hosts
// beside the whole network contradict it, and private addresses are the
// proxy's rule for allowed hosts (sbx run refused both; JSON ignored them).
func (r *Request) checkDomains() error {
	hosts := len(r.Additional.AllowedDomains()) > 0
	// As given, enabled or not: sbx run's flag beside --network alone
	// sets it on a profile that only denies.
	private := r.Additional.Network != nil && r.Additional.Network.AllowPrivateAddresses
	switch {
	case r.Network && hosts:
		return &strictjson.FieldError{Field: "additional_permissions.network.allowed_domains",
			Err: mention{"contradicts {network_access}, which reaches every address: give one or the other"}}
	case private && !hosts && r.Network:
		return &strictjson.FieldError{Field: "additional_permissions.network.allow_private_addresses",
			Err: mention{"no effect with {network_access}, which reaches private addresses already"}}
	case private && !hosts:
		return &strictjson.FieldError{Field: "additional_permissions.network.allow_private_addresses",
			Err: mention{"only valid with {additional_permissions.network.allowed_domains} (the proxy applies it)"}}
	}
	return nil
}

// retryDrops are the rows a retry leaves out of the call it repeats:
// escalating (require_escalated takes no additional permissions, and the
// whole network of danger-full-access runs no proxy for a pin), or asking
// for the whole network (the domain rows would contradict it). Both forms
// of the retry, argv and JSON, drop the same rows.
func retryDrops(escalating, wholeNetwork bool) []Field {
	var out []Field
	for _, f := range Fields {
		switch {
		case escalating && strings.HasPrefix(f.Key, "additional_permissions."),
			(escalating || wholeNetwork) && (strings.HasPrefix(f.Key, "additional_permissions.network.") || f.Key == "resolve"):
			out = append(out, f)
		}
	}
	return out
}
