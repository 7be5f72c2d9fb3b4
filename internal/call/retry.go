package call

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// RetryHint is the `retry` object of a report: the smallest escalation
// (escalate.SmallestRetry, with its grant form) plus the same call with
// it, as the argv of `sbx run` or the request of `sbx exec`.
type RetryHint struct {
	escalate.Retry
	// Argv is the `sbx run` command line to run again (sbx run only).
	Argv []string `json:"argv,omitempty"`
	// Request is the `sbx exec` request to send again (sbx exec only).
	Request map[string]any `json:"request,omitempty"`
	// Alternatives are escalate.Retry's, each with its own argv or
	// request; the first is this retry.
	Alternatives []RetryHint `json:"alternatives,omitempty"`
}

// Helps says whether the retry asks for anything.
func (h *RetryHint) Helps() bool { return h != nil && h.SandboxPermissions != nil }

// RetryForm says which forms of the same call the retry carries besides
// the escalation fields and the grant.
type RetryForm struct {
	// CommandLine, when set, is the call's command line: the retry gets
	// it again, with the escalation, as Argv.
	CommandLine *CommandLine
	// Request, when set, is the call's raw `sbx exec` request: the retry
	// gets it again, with the escalation, as Request.
	Request []byte
}

// CommandLine is a command line a retry repeats. The CLI gives its own
// spelling as data, so that this package knows no flag set: the flags a
// retry writes are the request table's (Fields).
type CommandLine struct {
	// Prefix starts the argv: "sbx", "run".
	Prefix []string
	// Args are the arguments after Prefix: flags, then "--" and the
	// command (or the command at the first argument that is no flag).
	Args []string
	// ValueFlags are the names (without dashes) of the flags that take
	// the next argument as their value when given without "=".
	ValueFlags map[string]bool
}

// Outcome is how a call that ran ended, as its retry sees it.
type Outcome int

const (
	// Failed: the command exited non-zero or was killed (sbx fs: the
	// change was not made).
	Failed Outcome = iota
	// Succeeded: the command exited 0 (sbx fs: ok). Its denials did not
	// fail it (report.Denial.Tolerated).
	Succeeded
)

// ExitOutcome is the outcome of a command by its report: Succeeded when it
// exited 0 by itself (no signal, nothing killed it).
func ExitOutcome(rep report.Report) Outcome {
	if rep.ExitCode == 0 && rep.Signal == nil && rep.KilledBy == "" && !rep.TimedOut {
		return Succeeded
	}
	return Failed
}

// Retry builds the exact-retry hint for a call that ran with denials and
// ended with outcome, or nil when there are none. A call that succeeded
// gets none unless it asked (retry_on_success): a runtime that follows
// every retry would otherwise ask its user for a widening the command did
// not need (git status exits 0 without the index lock it was refused).
// What the guard Prepare loaded forbids gets no hint. form says which
// forms of the call the hint repeats.
func (p *Prepared) Retry(denials []report.Denial, outcome Outcome, form RetryForm) *RetryHint {
	if outcome == Succeeded && !p.Request.RetryOnSuccess {
		return nil
	}
	r, ok := escalate.SmallestRetry(escalate.RetryInput{Policy: p.Call.Policy, Guard: p.Guard, Additional: p.Request.Additional,
		SandboxPermissions: p.Request.Escalation.SandboxPermissions, Denials: denials, Env: p.Call.Cmd.Env, Command: p.Request.Command})
	if !ok {
		return nil
	}
	h := p.hint(r, form)
	for _, alt := range r.Alternatives {
		h.Alternatives = append(h.Alternatives, *p.hint(alt, form))
	}
	return h
}

// hint is r with the forms of the call that form asks for.
func (p *Prepared) hint(r escalate.Retry, form RetryForm) *RetryHint {
	h := &RetryHint{Retry: r}
	h.Retry.Alternatives = nil
	if form.CommandLine != nil {
		h.Argv = form.CommandLine.Argv(r, p.Request.Additional)
	}
	if form.Request != nil {
		h.Request = retryRequest(form.Request, r)
	}
	return h
}

// Argv is the command line again with the retry r's escalation: the rows
// the retry changes (argvChanges) are written with their flags, every
// other flag and the command are kept as given. orig is the call's own
// normalised additional profile. Argv is nil when r asks for nothing.
func (cl CommandLine) Argv(r escalate.Retry, orig profiles.Profile) []string {
	if r.SandboxPermissions == nil {
		return nil
	}
	flags, command := cl.split()
	caps, _ := FieldByKey("cap_add")
	var haveCaps []string
	for _, g := range flags {
		if g.name == caps.Flag {
			haveCaps = append(haveCaps, g.value)
		}
	}
	return cl.render(flags, command, argvChanges(r, orig, haveCaps))
}

// op is what a retry does to a row of the call it repeats.
type op int

const (
	// opDrop: the row leaves the call.
	opDrop op = iota
	// opSet: the row is given anew (a switch: given, where it was not).
	opSet
	// opAdd: a list row gets values beside the caller's own.
	opAdd
)

// change is one row of a retry: the call plus the widening is the call
// with its changes, which each front end writes in its own words (argv:
// the row's flag; JSON: its key).
type change struct {
	// key is the row's Key (Fields); a JSON change may also name the
	// object the rows under it make up (additional_permissions), or
	// preauthorized, which says how to read those rows.
	key    string
	op     op
	values []string
	// wire is the JSON value of an opSet without values (the profile).
	wire any
}

// argvChanges are the rows the retry r changes on a command line: a retry
// that needs only the network gives the network flag, the caller's own
// switch for it (and leaves the escalation as given); one that needs
// paths or capabilities asks for them with with_additional_permissions
// and an empty justification for the caller to fill in; an escalation
// replaces the escalation flags. haveCaps are the capabilities the line
// keeps already.
func argvChanges(r escalate.Retry, orig profiles.Profile, haveCaps []string) []change {
	escalating := *r.SandboxPermissions == profiles.RequireEscalated
	var newWrite []string
	if r.AdditionalPermissions != nil {
		for _, w := range r.AdditionalPermissions.WritePaths() {
			if !fspath.CoveredBy(w, orig.WritePaths()) {
				newWrite = append(newWrite, w)
			}
		}
	}
	needNetwork := !escalating && r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkEnabled() && !orig.NetworkEnabled()
	var out []change
	// require_escalated takes no additional permissions; the whole
	// network (danger-full-access has it too) contradicts the domain
	// flags, and sbx run refuses them beside it.
	for _, row := range retryDrops(escalating, needNetwork) {
		out = append(out, change{key: row.Key, op: opDrop})
	}
	if escalating {
		return append(out, change{key: "sandbox_permissions", op: opDrop},
			change{key: "escalate_to", op: opSet, values: []string{r.EscalateTo.String()}},
			change{key: "justification", op: opSet, values: []string{""}})
	}
	if needNetwork {
		out = append(out, change{key: "network_access", op: opSet})
	}
	if !needNetwork && r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkMode() == profiles.NetworkDomains {
		// Exactly the hosts refused, never --network.
		var newDomains []string
		had := orig.AllowedPatterns()
		for _, dp := range r.AdditionalPermissions.AllowedPatterns() {
			if !profiles.DomainsWithin(dp, had) {
				// The retry's profile was built canonical (profiles.New):
				// its spelling is the pattern's.
				newDomains = append(newDomains, dp.String())
			}
		}
		if len(newDomains) > 0 {
			out = append(out, change{key: "additional_permissions.network.allowed_domains", op: opAdd, values: newDomains})
		}
		if r.AdditionalPermissions.AllowPrivateAddresses() && !orig.AllowPrivateAddresses() {
			out = append(out, change{key: "additional_permissions.network.allow_private_addresses", op: opSet})
		}
	}
	var newCaps []string
	for _, c := range r.CapAdd {
		if !slices.Contains(haveCaps, c) {
			newCaps = append(newCaps, c)
		}
	}
	if len(newWrite) > 0 || len(newCaps) > 0 {
		out = append(out, change{key: "escalate_to", op: opDrop},
			change{key: "sandbox_permissions", op: opSet, values: []string{profiles.WithAdditionalPermissions.String()}})
		if len(newWrite) > 0 {
			out = append(out, change{key: "additional_permissions.file_system.write", op: opAdd, values: newWrite})
		}
		if len(newCaps) > 0 {
			out = append(out, change{key: "cap_add", op: opAdd, values: newCaps})
		}
		out = append(out, change{key: "justification", op: opSet, values: []string{""}})
	}
	return out
}

// jsonChanges are the rows the retry r changes in an `sbx exec` request:
// the escalation pair always (an empty justification to fill in), and
// either the target mode (an escalation takes no additional permissions)
// or the whole additional profile the retry asks for, with the
// capabilities beside the request's own.
func jsonChanges(r escalate.Retry) []change {
	escalating := *r.SandboxPermissions == profiles.RequireEscalated
	out := []change{{key: "sandbox_permissions", op: opSet, values: []string{r.SandboxPermissions.String()}},
		{key: "justification", op: opSet, values: []string{""}},
		// The retry asks for what it needs: preauthorized is for
		// use_default only, and the call's own permissions are now
		// part of the request.
		{key: "preauthorized", op: opDrop}}
	wholeNetwork := r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkMode() == profiles.NetworkAll &&
		len(r.AdditionalPermissions.DeniedDomains()) == 0
	for _, row := range retryDrops(escalating, wholeNetwork) {
		// The rows beside the profile (resolve); the profile itself is
		// replaced below.
		if !strings.HasPrefix(row.Key, additionalKey+".") {
			out = append(out, change{key: row.Key, op: opDrop})
		}
	}
	if escalating {
		return append(out, change{key: "escalate_to", op: opSet, values: []string{r.EscalateTo.String()}},
			change{key: additionalKey, op: opDrop})
	}
	out = append(out, change{key: additionalKey, op: opSet, wire: r.AdditionalPermissions}, change{key: "escalate_to", op: opDrop})
	if len(r.CapAdd) > 0 {
		out = append(out, change{key: "cap_add", op: opAdd, values: r.CapAdd})
	}
	return out
}

// additionalKey is the JSON object the additional_permissions rows make up;
// a retry replaces it whole.
const additionalKey = "additional_permissions"

// render is the command line flags -- command with changes, each row
// written with its flag (Fields): a dropped or set row's flags leave the
// line, set and added values are appended in the order of changes, and a
// switch the line gives already stays where it is.
func (cl CommandLine) render(flags []givenFlag, command []string, changes []change) []string {
	drop := map[string]bool{}
	for _, c := range changes {
		if f, _ := FieldByKey(c.key); c.op == opDrop || c.op == opSet && !f.Switch {
			drop[f.Flag] = true
		}
	}
	argv := append([]string{}, cl.Prefix...)
	given := map[string]bool{}
	for _, g := range flags {
		given[g.name] = true
		if !drop[g.name] {
			argv = append(argv, g.tokens...)
		}
	}
	for _, c := range changes {
		f, _ := FieldByKey(c.key)
		switch {
		case c.op == opDrop:
		case f.Switch:
			if !given[f.Flag] {
				argv = append(argv, flagSpelling(f.Flag))
			}
		default:
			for _, v := range c.values {
				argv = append(argv, flagSpelling(f.Flag), v)
			}
		}
	}
	if len(command) > 0 {
		argv = append(append(argv, "--"), command...)
	}
	return argv
}

// givenFlag is a flag of a command line: its name, its value, and the
// arguments it was given as (--mode x, -mode=x, --network).
type givenFlag struct {
	name, value string
	tokens      []string
}

// split walks the flags of cl.Args the way the flag package parses them
// (ValueFlags say which take the next argument) and returns them and the
// command after them.
func (cl CommandLine) split() (flags []givenFlag, command []string) {
	args := cl.Args
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return flags, args[i+1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		g := givenFlag{name: name, value: value, tokens: []string{a}}
		if cl.ValueFlags[name] && !hasValue && i+1 < len(args) {
			g.value = args[i+1]
			g.tokens = append(g.tokens, args[i+1])
			i++
		}
		i++
		flags = append(flags, g)
	}
	return flags, args[i:]
}

// retryRequest is the original `sbx exec` request with the rows the retry
// changes (jsonChanges) written by their keys, and every other field as
// sent.
func retryRequest(raw []byte, r escalate.Retry) map[string]any {
	if r.SandboxPermissions == nil {
		return nil
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	for _, c := range jsonChanges(r) {
		switch {
		case c.op == opDrop:
			delete(m, c.key)
		case c.op == opSet && c.values == nil:
			m[c.key] = c.wire
		case c.op == opSet:
			m[c.key] = c.values[0]
		default:
			list := []string{}
			if have, ok := m[c.key].([]any); ok {
				for _, v := range have {
					if s, ok := v.(string); ok {
						list = append(list, s)
					}
				}
			}
			for _, v := range c.values {
				if !slices.Contains(list, v) {
					list = append(list, v)
				}
			}
			m[c.key] = list
		}
	}
	return m
}
