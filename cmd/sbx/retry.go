package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"sbx/enforce"
	"sbx/escalate"
	"sbx/policy"
	"sbx/profiles"
)

// retryHint is the `retry` object of a report: the smallest escalation
// (escalate.SmallestRetry) plus the same call with it, as the argv of
// `sbx run` or the request of `sbx exec`.
type retryHint struct {
	escalate.Retry
	// Argv is the `sbx run` command line to run again (sbx run only).
	Argv []string `json:"argv,omitempty"`
	// Request is the `sbx exec` request to send again (sbx exec only).
	Request map[string]any `json:"request,omitempty"`
}

// helps says whether the retry asks for anything.
func (h *retryHint) helps() bool { return h != nil && h.SandboxPermissions != nil }

// smallestRetry computes the hint for a call that ran with denials, or nil.
// The guard is read again, as resolvePermissions read it: what it forbids
// gets no hint.
func smallestRetry(pol policy.Policy, req request, cwd string, denials []enforce.Denial) *retryHint {
	guard, err := escalate.LoadGuard(req.Escalation.GuardPath)
	if err != nil {
		return &retryHint{Retry: escalate.Retry{Unresolved: []escalate.Unresolved{{Operation: "retry", Reason: err.Error()}}}}
	}
	add, err := req.Additional.Normalize(cwd)
	if err != nil {
		add = profiles.Profile{}
	}
	r, ok := escalate.SmallestRetry(escalate.RetryInput{Policy: pol, Guard: guard, Additional: add,
		SandboxPermissions: req.Escalation.SandboxPermissions, Denials: denials})
	if !ok {
		return nil
	}
	return &retryHint{Retry: r}
}

// runRetryArgv is the original `sbx run` arguments (after "run") with the
// retry's escalation: the escalation flags of the original are replaced,
// every other flag and the command are kept as given. A retry that needs
// only the network adds --network, the caller's own switch for it; one that
// needs paths asks for them with --sandbox-permissions
// with_additional_permissions --allow-write, and --justification ” for the
// caller to fill in.
func runRetryArgv(fs *flag.FlagSet, args []string, r escalate.Retry, orig profiles.Profile) []string {
	return subRetryArgv("run", fs, args, r, orig)
}

// subRetryArgv is runRetryArgv for any subcommand that takes the run flags
// and then its own arguments (`sbx fs`): "sbx SUB FLAGS... -- ARGS...".
func subRetryArgv(sub string, fs *flag.FlagSet, args []string, r escalate.Retry, orig profiles.Profile) []string {
	if r.SandboxPermissions == nil {
		return nil
	}
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
	replace := escalating || len(newWrite) > 0
	drop := map[string]bool{}
	if replace {
		drop["sandbox-permissions"], drop["escalate"], drop["justification"] = true, true, true
	}
	if escalating {
		// require_escalated takes no additional permissions.
		drop["allow-read"], drop["allow-write"] = true, true
	}
	kept, command, hasNetwork := splitRunArgs(fs, args, drop)
	argv := append([]string{"sbx", sub}, kept...)
	if needNetwork && !hasNetwork {
		argv = append(argv, "--network")
	}
	switch {
	case escalating:
		argv = append(argv, "--escalate", r.EscalateTo.String(), "--justification", "")
	case len(newWrite) > 0:
		argv = append(argv, "--sandbox-permissions", profiles.WithAdditionalPermissions.String())
		for _, w := range newWrite {
			argv = append(argv, "--allow-write", w)
		}
		argv = append(argv, "--justification", "")
	}
	if len(command) > 0 {
		argv = append(append(argv, "--"), command...)
	}
	return argv
}

// splitRunArgs walks the flags of args the way fs parsed them and returns
// those not named in drop (with their values), the command after them, and
// whether --network was given.
func splitRunArgs(fs *flag.FlagSet, args []string, drop map[string]bool) (kept, command []string, network bool) {
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
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			tokens = append(tokens, args[i+1])
			i++
		}
		i++
		if name == "network" {
			network = true
		}
		if !drop[name] {
			kept = append(kept, tokens...)
		}
	}
	return kept, args[i:], network
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// execRetryRequest is the original `sbx exec` request with the retry's
// escalation fields set, and every other field as sent.
func execRetryRequest(raw []byte, r escalate.Retry) map[string]any {
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
	if *r.SandboxPermissions == profiles.RequireEscalated {
		m["escalate_to"] = r.EscalateTo.String()
		delete(m, "additional_permissions")
	} else {
		m["additional_permissions"] = r.AdditionalPermissions
		delete(m, "escalate_to")
	}
	return m
}

// maxExplained bounds the summary; the report has the rest.
const maxExplained = 10

// explainDenials writes the human summary of `sbx run`: one line per
// denial, the ones no retry helps with, and the retry command.
func explainDenials(w io.Writer, ds []enforce.Denial, dropped int, h *retryHint) {
	if len(ds) == 0 {
		return
	}
	for i, d := range ds {
		if i == maxExplained {
			fmt.Fprintf(w, "sbx: ... and %d more denials (see --report)\n", len(ds)-i)
			break
		}
		times := ""
		if d.Count > 1 {
			times = fmt.Sprintf(", %d times", d.Count)
		}
		fmt.Fprintf(w, "sbx: denied %s %s (%s, pid %d%s): %s\n", d.Operation, denialObject(d.Path, d.Address), d.Syscall, d.PID, times, d.Reason)
	}
	if dropped > 0 {
		fmt.Fprintf(w, "sbx: %d more denials were not listed\n", dropped)
	}
	if h == nil {
		return
	}
	for _, u := range h.Unresolved {
		fmt.Fprintf(w, "sbx: no retry for %s %s: %s\n", u.Operation, denialObject(u.Path, u.Address), u.Reason)
	}
	if h.Reason != "" {
		fmt.Fprintf(w, "sbx: needs %s: %s\n", h.EscalateTo, h.Reason)
	}
	if len(h.Argv) > 0 {
		fmt.Fprintf(w, "sbx: retry: %s\n", shellJoin(h.Argv))
		if h.Justification != nil && slices.Contains(h.Argv, "--justification") {
			fmt.Fprintln(w, "sbx: (fill in --justification)")
		}
	}
}

func denialObject(path string, a *enforce.Address) string {
	if a == nil {
		return path
	}
	s := a.Family
	if a.Address != "" {
		s += " " + a.Address
		if a.Port != 0 {
			s += fmt.Sprintf(":%d", a.Port)
		}
	}
	return s
}

// shellSafe reports whether a needs no quoting in a POSIX shell: it is
// not empty and has only letters, digits and _@%+=:,./- (a regexp would
// cost every sbx start its compilation).
func shellSafe(a string) bool {
	for _, c := range a {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_@%+=:,./-", c)) {
			return false
		}
	}
	return a != ""
}

// shellJoin quotes argv for a POSIX shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if shellSafe(a) {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
