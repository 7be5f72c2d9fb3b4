package darwin

import (
	"encoding/json"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Denial evidence from the unified log, as report.Denial reports it.
const (
	DenialSource     = "macos-sandbox-log"
	DenialConfidence = "observed"
)

// LogPredicate selects the kernel Sandbox extension's messages in
// `log stream --style ndjson --predicate`.
const LogPredicate = `sender == "Sandbox"`

// logReadyPrefix is the line log stream prints once it is attached; denials
// before it are not seen.
const logReadyPrefix = "Filtering the log data using "

// sandboxMessage matches the eventMessage of a Seatbelt violation:
//
//	Sandbox: touch(4242) deny(1) file-write-create /private/etc/x
//
// The process name may itself contain parentheses; the count is how many
// identical violations the kernel folded into this message.
var sandboxMessage = regexp.MustCompile(`^Sandbox: (.+)\((\d+)\) deny\((\d+)\) (\S+)(?: (.*))?$`)

// LoggedDenial is one parsed violation, before filtering by pid.
type LoggedDenial struct {
	Process string
	Denial  report.Denial
}

// ParseLogLine parses one ndjson line of log stream. ok is false for lines
// that are not Seatbelt violations (the ready banner, other messages, "allow"
// reports of (with report) rules).
func ParseLogLine(line []byte) (LoggedDenial, bool) {
	var ev struct {
		EventMessage string `json:"eventMessage"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return LoggedDenial{}, false
	}
	return ParseMessage(ev.EventMessage)
}

// ParseMessage parses the eventMessage of one Seatbelt violation.
func ParseMessage(msg string) (LoggedDenial, bool) {
	m := sandboxMessage.FindStringSubmatch(strings.TrimSpace(msg))
	if m == nil {
		return LoggedDenial{}, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return LoggedDenial{}, false
	}
	count, err := strconv.Atoi(m[3])
	if err != nil || count < 1 {
		count = 1
	}
	d := report.Denial{Operation: m[4], PID: pid, Source: DenialSource, Confidence: DenialConfidence, Count: count}
	target := strings.TrimSpace(m[5])
	switch {
	case strings.HasPrefix(d.Operation, "network"):
		d.Address = parseAddress(target)
		if d.Address == nil && target != "" {
			d.Reason = target
		}
	case strings.HasPrefix(target, "/"):
		d.Path = target
	case target != "":
		// mach-lookup com.apple.x, sysctl-read kern.x, signal, ...: the
		// target is not a path.
		d.Reason = target
	}
	return LoggedDenial{Process: m[1], Denial: d}, true
}

// parseAddress reads the target of a network denial: a unix socket path,
// or host:port (IPv6 hosts in brackets, "*" for any).
//
// IMPORTANT: the exact address format of network denials is taken from
// published log samples, not observed here.
func parseAddress(target string) *report.Address {
	if target == "" {
		return nil
	}
	if strings.HasPrefix(target, "/") {
		return &report.Address{Family: "unix", Address: target}
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil
	}
	a := &report.Address{Family: "inet", Address: host}
	if strings.Contains(host, ":") {
		a.Family = "inet6"
	}
	if n, err := strconv.Atoi(port); err == nil {
		a.Port = n
	}
	return a
}

// sbxOp is a Seatbelt operation in the vocabulary the Linux backend
// reports, and the access the policy is checked for.
type sbxOp struct {
	op     string
	access denial.Access
	file   bool
}

// seatbeltOps maps the Seatbelt operations sbx's profiles can deny to the
// operation names of Linux denials, so retry hints read the same on both.
// Operations not listed (mach-lookup, sysctl-read, ...) have no Linux
// counterpart and keep their Seatbelt name.
var seatbeltOps = map[string]sbxOp{
	"file-write-create":  {"create", denial.Create, true},
	"file-write-data":    {"write", denial.WriteObject, true},
	"file-write-unlink":  {"remove", denial.Remove, true},
	"file-write-mode":    {"chmod", denial.Metadata, true},
	"file-write-owner":   {"chown", denial.Metadata, true},
	"file-read-data":     {op: "read"},
	"file-read-metadata": {op: "read"},
	"network-outbound":   {op: "connect"},
	"network-bind":       {op: "bind"},
}

// Denials keeps the logged denials of the given pids, names each in the
// Linux vocabulary with the reason the policy forbids it (the Seatbelt
// operation in parentheses), and folds repeats the way the Linux backend
// does. dropped counts occurrences beyond denial.DefaultCap distinct entries.
func Denials(logged []LoggedDenial, pids map[int]bool, pol policy.Policy) (ds []report.Denial, dropped int) {
	log := denial.NewLog(denial.DefaultCap)
	check := denial.NewChecker(pol, denial.Extra{})
	for _, l := range logged {
		if pids[l.Denial.PID] {
			log.Add(classify(l.Denial, check, pol))
		}
	}
	return log.Denials()
}

func classify(d report.Denial, check *denial.Checker, pol policy.Policy) report.Denial {
	raw := d.Operation
	m, ok := seatbeltOps[raw]
	if !ok {
		return d
	}
	d.Operation = m.op
	why := "denied by the profile"
	switch {
	case m.file && d.Path != "":
		if v := check.Path(m.access, d.Path); !v.Allowed {
			why = v.Reason()
		}
	case m.op == "read" && d.Path != "":
		for _, masked := range pol.Masked {
			if fspath.Within(d.Path, masked) {
				why = "inside " + masked + ", which the guard hides"
				break
			}
		}
	case d.Address != nil && pol.Network == policy.NetworkIsolated:
		why = "network is off"
		if d.Address.Family == "unix" {
			why = "unix socket outside the writable roots"
		}
	}
	if d.Reason != "" {
		why += ": " + d.Reason
	}
	d.Reason = why + " (seatbelt " + raw + ")"
	return d
}
