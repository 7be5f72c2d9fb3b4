package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

func init() {
	register("doctor", command{summary: "show what this kernel and user can enforce, and what sbx does about each gap", run: doctorCmd})
}

func doctorCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("doctor", "Usage: sbx doctor [--json]\n\nProbes Landlock, seccomp, namespaces and cgroups on this system.\n\nFlags:\n", stdio)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stdio.Err, "sbx doctor: unexpected argument %q (doctor takes only --json)\n", fs.Arg(0))
		return ExitRefused
	}
	checks := host.Doctor()
	if *asJSON {
		return writeJSON(stdio.Out, map[string]any{"checks": checks})
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tOK\tDETAIL\tWHEN MISSING")
	for _, c := range checks {
		ok := "no"
		if c.Available {
			ok = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Feature, ok, c.Detail, c.Fallback)
	}
	tw.Flush()
	return 0
}
