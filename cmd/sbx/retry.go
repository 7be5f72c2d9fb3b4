package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// retryCommandLine is the command line of `sbx SUB` for the retry: the
// flags of fs as data, and the arguments after SUB as given.
func retryCommandLine(sub string, fs *flag.FlagSet, args []string) *call.CommandLine {
	values := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if !isBoolFlag(f) {
			values[f.Name] = true
		}
	})
	return &call.CommandLine{Prefix: []string{"sbx", sub}, Args: args, ValueFlags: values}
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runRetry is the retry of sbx run's call p, whose run reported rep and
// ended with runErr (not nil: the command did not start, a failure): the
// denials of a call that succeeded are tolerated, and it has a retry only
// when it asked (--retry-on-success). cl is the call's command line.
func runRetry(p *call.Prepared, rep *report.Report, runErr error, cl *call.CommandLine) *call.RetryHint {
	outcome := call.Failed
	if runErr == nil {
		outcome = call.ExitOutcome(*rep)
	}
	if outcome == call.Succeeded {
		report.Tolerate(rep.Denials)
	}
	return p.Retry(rep.Denials, outcome, call.RetryForm{CommandLine: cl})
}

// maxExplained bounds the summary; the report has the rest.
const maxExplained = 10

// explainDenials writes the human summary of `sbx run`: one line per
// denial, the ones no retry helps with, and the retry command.
func explainDenials(w io.Writer, ds []report.Denial, dropped int, h *call.RetryHint) {
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
		if d.Domain != "" {
			// The proxy's: the host asked for, and the address refused
			// when it was the address.
			what := hostPort(d.Domain, d.Port)
			if d.Address != nil {
				what += " (" + d.Address.Address + ")"
			}
			fmt.Fprintf(w, "sbx: denied %s %s (%s%s): %s\n", d.Operation, what, d.Source, times, d.Reason)
			continue
		}
		fmt.Fprintf(w, "sbx: denied %s %s (%s, pid %d%s): %s\n", d.Operation, denialObject(d.Path, d.Address), d.Syscall, d.PID, times, d.Reason)
	}
	if dropped > 0 {
		fmt.Fprintf(w, "sbx: %d more denials were not listed\n", dropped)
	}
	if ds[0].Tolerated && h == nil {
		// Quiet on success: say why there is no retry, and how to get one.
		fmt.Fprintln(w, "sbx: the command succeeded: these denials did not fail it (no retry; --retry-on-success gives one)")
	}
	if h == nil {
		return
	}
	for _, u := range h.Unresolved {
		what := denialObject(u.Path, u.Address)
		if u.Domain != "" {
			what = hostPort(u.Domain, u.Port)
		}
		fmt.Fprintf(w, "sbx: no retry for %s %s: %s\n", u.Operation, what, u.Reason)
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

func denialObject(path string, a *report.Address) string {
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

// hostPort is host:port, an IPv6 host in brackets (net.JoinHostPort: sbx
// does not link package net).
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}
