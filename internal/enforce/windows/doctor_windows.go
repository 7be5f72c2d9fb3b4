//go:build windows

package windows

import (
	"golang.org/x/sys/windows"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// Doctor probes what this system can enforce: it builds a job and a
// restricted token the way a call does, and lists the gaps every call has.
func Doctor() []report.Check {
	var out []report.Check
	if h, err := newJob(Job{}); err != nil {
		out = append(out, report.Check{Feature: report.FeatureJob, Detail: err.Error(), Fallback: "refuse to run"})
	} else {
		windows.CloseHandle(h)
		out = append(out, report.Check{Feature: report.FeatureJob, Available: true, Detail: "kill on close, breakaway forbidden"})
	}
	opts, err := DefaultOptions()
	if err == nil {
		var tok interface{ Close() error }
		tok, err = restrictedToken(&Plan{CallSID: opts.CallSID, RestrictingSIDs: []string{opts.CallSID, EveryoneSID, LogonSID}})
		if err == nil {
			tok.Close()
		}
	}
	if err != nil {
		out = append(out, report.Check{Feature: report.FeatureRestrictedToken, Detail: err.Error(), Fallback: "refuse to run"})
	} else {
		out = append(out, report.Check{Feature: report.FeatureRestrictedToken, Available: true, Detail: "write-restricted, max privileges disabled"})
	}
	for _, d := range []report.Downgrade{everyoneWritable, noDenials, noNetwork, noMask} {
		out = append(out, report.Check{Feature: d.Feature, Detail: d.Reason, Fallback: "report degraded"})
	}
	return out
}
