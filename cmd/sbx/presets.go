package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

func init() {
	register("presets", command{summary: "list the built-in presets, or derive the preset of a mode and policy", run: presetsCmd})
}

const presetsUsage = `Usage:
  sbx presets [--json]
  sbx presets derive --mode MODE --approval-policy POLICY [--last KEY]

A preset is a named pair of sandbox mode and approval policy. "derive" prints
the key the pair amounts to: KEY (the last choice) if it still matches, else
the first matching preset, else "custom" (which can never be selected).
`

// presetsList is the --json shape.
type presetsList struct {
	Presets []profiles.Preset `json:"presets"`
	Default string            `json:"default"`
}

func presetsCmd(args []string, stdio Stdio) int {
	if len(args) > 0 && args[0] == "derive" {
		return presetsDerive(args[1:], stdio)
	}
	fs := presetsFlagSet("presets", stdio)
	asJSON := fs.Bool("json", false, "print JSON: {\"presets\": [...], \"default\": KEY}")
	if code, ok := presetsParse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return presetsRefuse(stdio, fmt.Errorf("unknown subcommand %q (want derive)", fs.Arg(0)))
	}
	table := profiles.Builtin()
	if *asJSON {
		b, err := json.MarshalIndent(presetsList{Presets: table.List(), Default: table.Default().Key}, "", "  ")
		if err != nil {
			return presetsRefuse(stdio, err)
		}
		stdio.Out.Write(append(b, '\n'))
		return 0
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSANDBOX MODE\tAPPROVAL POLICY\tDEFAULT\tLABEL")
	for _, p := range table.List() {
		def := ""
		if p.Key == table.Default().Key {
			def = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Key, p.SandboxMode, p.ApprovalPolicy, def, p.Label)
	}
	tw.Flush()
	return 0
}

func presetsDerive(args []string, stdio Stdio) int {
	fs := presetsFlagSet("presets derive", stdio)
	mode := fs.String("mode", "", "sandbox `MODE`: read-only, workspace-write or danger-full-access (required)")
	policy := fs.String("approval-policy", "", "approval `POLICY`: never, on-request, on-failure, untrusted or granular:CATEGORY,... (required)")
	last := fs.String("last", "", "the `KEY` last selected, which wins while it still matches")
	if code, ok := presetsParse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return presetsRefuse(stdio, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *mode == "" {
		return presetsRefuse(stdio, errors.New("--mode: required"))
	}
	m, err := profiles.ParseMode(*mode)
	if err != nil {
		return presetsRefuse(stdio, fmt.Errorf("--mode: %w", err))
	}
	if *policy == "" {
		return presetsRefuse(stdio, errors.New("--approval-policy: required"))
	}
	ap, err := profiles.ParseApprovalPolicy(*policy)
	if err != nil {
		return presetsRefuse(stdio, fmt.Errorf("--approval-policy: %w", err))
	}
	fmt.Fprintln(stdio.Out, profiles.Derive(m, ap, *last))
	return 0
}

func presetsFlagSet(name string, stdio Stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	fs.Usage = func() {
		fmt.Fprint(stdio.Err, presetsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// presetsParse parses args; ok is false when the command is done (help or a
// flag error, already printed by the flag package) with the returned status.
func presetsParse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return ExitRefused, false
	}
	return 0, true
}

func presetsRefuse(stdio Stdio, err error) int {
	fmt.Fprintf(stdio.Err, "sbx presets: %v\n", err)
	return ExitRefused
}
