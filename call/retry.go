package call

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/escalate"
	"github.com/sbx-sandbox/sbx/profiles"
	"github.com/sbx-sandbox/sbx/report"
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
// spelling as data, so that this package knows no flag set.
type CommandLine struct {
	// Prefix starts the argv: "sbx", "run".
	Prefix []string
	// Args are the arguments after Prefix: flags, then "--" and the
	// command (or the command at the first argument that is no flag).
	Args []string
	// ValueFlags are the names (without dashes) of the flags that take
	// the next argument as their value when given without "=".
	ValueFlags map[string]bool
	// Flags are the names of the flags the retry adds or replaces.
	Flags RetryFlags
}

// RetryFlags name the flags (without dashes) of a command line's
// escalation.
type RetryFlags struct {
	// Network is the caller's own switch for the network.
	Network string
	// SandboxPermissions, Escalate and Justification are the escalation
	// pair (Escalate implying require_escalated with a target mode).
	SandboxPermissions, Escalate, Justification string
	// AllowRead and AllowWrite are the additional permissions.
	AllowRead, AllowWrite string
	// AllowDomain, DenyDomain, AllowPrivateAddresses and Resolve are
	// network by domain.
	AllowDomain, DenyDomain, AllowPrivateAddresses, Resolve string
	// CapAdd keeps a capability for the command.
	CapAdd string
}

// TableRetryFlags are the RetryFlags of sbx run, read from Fields: a flag
// renamed there is renamed in every retry.
func TableRetryFlags() RetryFlags {
	flag := func(key string) string {
		f, _ := FieldByKey(key)
		return f.Flag
	}
	return RetryFlags{Network: flag("network_access"), SandboxPermissions: flag("sandbox_permissions"), Escalate: flag("escalate_to"),
		Justification: flag("justification"), AllowRead: flag("additional_permissions.file_system.read"),
		AllowWrite: flag("additional_permissions.file_system.write"), AllowDomain: flag("additional_permissions.network.allowed_domains"),
		DenyDomain: flag("additional_permissions.network.denied_domains"), AllowPrivateAddresses: flag("additional_permissions.network.allow_private_addresses"),
		Resolve: flag("resolve"), CapAdd: flag("cap_add")}
}

// Retry builds the exact-retry hint for a call that ran with denials, or
// nil when there are none. What the guard Prepare loaded forbids gets no
// hint. form says which forms of the call the hint repeats.
func (p *Prepared) Retry(denials []report.Denial, form RetryForm) *RetryHint {
	r, ok := escalate.SmallestRetry(escalate.RetryInput{Policy: p.Call.Policy, Guard: p.Guard, Additional: p.Request.Additional,
		SandboxPermissions: p.Request.Escalation.SandboxPermissions, Denials: denials})
	if !ok {
		return nil
	}
	h := &RetryHint{Retry: r}
	if form.CommandLine != nil {
		h.Argv = form.CommandLine.Argv(r, p.Request.Additional)
	}
	if form.Request != nil {
		h.Request = retryRequest(form.Request, r)
	}
	return h
}

// Argv is the command line again with the retry r's escalation: the
// escalation flags of the original are replaced, every other flag and the
// command are kept as given. A retry that needs only the network adds the
// network flag, the caller's own switch for it; one that needs paths asks
// for them with with_additional_permissions and the write flag, and an
// empty justification for the caller to fill in. orig is the call's own
// normalised additional profile. Argv is nil when r asks for nothing.
func (cl CommandLine) Argv(r escalate.Retry, orig profiles.Profile) []string {
	if r.SandboxPermissions == nil {
		return nil
	}
	f := cl.Flags
	escalating := *r.SandboxPermissions == profiles.RequireEscalated
	var newWrite []string
	if r.AdditionalPermissions != nil {
		for _, w := range r.AdditionalPermissions.WritePaths() {
			if !profiles.CoveredBy(w, orig.WritePaths()) {
				newWrite = append(newWrite, w)
			}
		}
	}
	needNetwork := !escalating && r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkEnabled() && !orig.NetworkEnabled()
	var newDomains []string
	newPrivate := false
	if !escalating && !needNetwork && r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkMode() == profiles.NetworkDomains {
		// Exactly the hosts refused, never --network.
		for _, d := range r.AdditionalPermissions.AllowedDomains() {
			if dp, err := profiles.ParseDomainPattern(d); err == nil && !profiles.DomainsWithin(dp, orig.AllowedDomains()) {
				newDomains = append(newDomains, d)
			}
		}
		newPrivate = r.AdditionalPermissions.AllowPrivateAddresses() && !orig.AllowPrivateAddresses()
	}
	var newCaps []string
	if !escalating {
		for _, c := range r.CapAdd {
			if !slices.Contains(cl.flagValues(f.CapAdd), c) {
				newCaps = append(newCaps, c)
			}
		}
	}
	replace := escalating || len(newWrite) > 0 || len(newCaps) > 0
	drop := map[string]bool{}
	if replace {
		drop[f.SandboxPermissions], drop[f.Escalate], drop[f.Justification] = true, true, true
	}
	// require_escalated takes no additional permissions; the whole
	// network (danger-full-access has it too) contradicts the domain
	// flags, and sbx run refuses them beside it.
	for _, row := range retryDrops(escalating, needNetwork) {
		drop[row.Flag] = true
	}
	kept, command, hasNetwork := splitArgs(cl, drop)
	argv := append(append([]string{}, cl.Prefix...), kept...)
	if needNetwork && !hasNetwork {
		argv = append(argv, "--"+f.Network)
	}
	for _, d := range newDomains {
		argv = append(argv, "--"+f.AllowDomain, d)
	}
	if newPrivate {
		argv = append(argv, "--"+f.AllowPrivateAddresses)
	}
	switch {
	case escalating:
		argv = append(argv, "--"+f.Escalate, r.EscalateTo.String(), "--"+f.Justification, "")
	case len(newWrite) > 0 || len(newCaps) > 0:
		argv = append(argv, "--"+f.SandboxPermissions, profiles.WithAdditionalPermissions.String())
		for _, w := range newWrite {
			argv = append(argv, "--"+f.AllowWrite, w)
		}
		for _, c := range newCaps {
			argv = append(argv, "--"+f.CapAdd, c)
		}
		argv = append(argv, "--"+f.Justification, "")
	}
	if len(command) > 0 {
		argv = append(append(argv, "--"), command...)
	}
	return argv
}

// splitArgs walks the flags of cl.Args the way the flag package parses
// them and returns those not named in drop (with their values), the
// command after them, and whether the network flag was given.
func splitArgs(cl CommandLine, drop map[string]bool) (kept, command []string, network bool) {
	args := cl.Args
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return kept, args[i+1:], network
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		tokens := []string{a}
		if cl.ValueFlags[name] && !hasValue && i+1 < len(args) {
			tokens = append(tokens, args[i+1])
			i++
		}
		i++
		if name == cl.Flags.Network {
			network = true
		}
		if !drop[name] {
			kept = append(kept, tokens...)
		}
	}
	return kept, args[i:], network
}

// retryRequest is the original `sbx exec` request with the retry's
// escalation fields set, and every other field as sent.
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
	m["sandbox_permissions"] = r.SandboxPermissions.String()
	m["justification"] = ""
	// The retry asks for what it needs: preauthorized is for use_default
	// only, and the call's own permissions are now part of the request.
	delete(m, "preauthorized")
	escalating := *r.SandboxPermissions == profiles.RequireEscalated
	wholeNetwork := r.AdditionalPermissions != nil && r.AdditionalPermissions.NetworkMode() == profiles.NetworkAll &&
		len(r.AdditionalPermissions.DeniedDomains()) == 0
	for _, row := range retryDrops(escalating, wholeNetwork) {
		// The rows beside the profile (resolve); the profile itself is
		// replaced below.
		if !strings.HasPrefix(row.Key, "additional_permissions.") {
			delete(m, row.Key)
		}
	}
	if escalating {
		m["escalate_to"] = r.EscalateTo.String()
		delete(m, "additional_permissions")
	} else {
		m["additional_permissions"] = r.AdditionalPermissions
		delete(m, "escalate_to")
		if len(r.CapAdd) > 0 {
			caps := []string{}
			if have, ok := m["cap_add"].([]any); ok {
				for _, c := range have {
					if s, ok := c.(string); ok {
						caps = append(caps, s)
					}
				}
			}
			for _, c := range r.CapAdd {
				if !slices.Contains(caps, c) {
					caps = append(caps, c)
				}
			}
			m["cap_add"] = caps
		}
	}
	return m
}

// flagValues are the values given to the flag name in cl.Args, before the
// command.
func (cl CommandLine) flagValues(name string) []string {
	var out []string
	args := cl.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && cl.ValueFlags[n] && i+1 < len(args) {
			i++
			v = args[i]
		}
		if n == name && name != "" {
			out = append(out, v)
		}
	}
	return out
}
