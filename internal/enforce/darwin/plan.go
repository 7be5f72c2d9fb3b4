package darwin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Launch modes, as reported in enforcement.launch.
const (
	// LaunchSandboxExec runs the command under the plan's profile.
	LaunchSandboxExec = "sandbox-exec"
	// LaunchDirect runs the command without any profile (danger-full-access).
	LaunchDirect = "direct"
)

// SandboxExec is the only sandbox-exec sbx runs. It is never looked up in
// PATH: a PATH entry the command's environment controls must not choose the
// program that applies the sandbox.
const SandboxExec = "/usr/bin/sandbox-exec"

// Param is one -D NAME=VALUE definition the profile refers to as
// (param "NAME").
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Plan is a Policy compiled to a Seatbelt profile: the exact text and
// parameters sandbox-exec gets for one call.
type Plan struct {
	Policy policy.Policy
	Launch string
	// Paths is how the policy's paths were canonicalised.
	Paths PathMode `json:"-"`
	// Profile is the SBPL text passed with -p ("" for LaunchDirect).
	Profile string `json:",omitempty"`
	// Params are the -D definitions, in the order they are passed.
	Params []Param `json:",omitempty"`
	// Masked are the canonical guard paths the profile denies.
	Masked     []string `json:",omitempty"`
	Downgrades []report.Downgrade
}

// parentDeath is reported for every darwin launch.
//
// IMPORTANT: macOS has no PR_SET_PDEATHSIG. If sbx itself is killed (not
// interrupted: signals are forwarded), the command keeps running, still under
// its profile.
var parentDeath = report.Downgrade{Feature: report.FeatureParentDeathKill,
	Reason: "macOS has no parent-death signal: if sbx is killed, the command keeps running (under its profile)"}

// Compile turns pol into a Plan. It fails only on a path that is not
// absolute; Seatbelt can express every part of a Policy, so nothing here is a
// Downgrade except the launcher's parent-death gap.
func Compile(pol policy.Policy, opts Options) (*Plan, error) {
	p := &Plan{Policy: pol, Launch: LaunchSandboxExec, Paths: opts.Paths}
	p.Downgrades = append(p.Downgrades, parentDeath)
	if pol.Unrestricted {
		p.Launch = LaunchDirect
		return p, nil
	}
	if pol.Domains != nil {
		// IMPORTANT: no proxy on macOS yet (its Seatbelt profile would
		// allow only the proxy's loopback port): the network stays off.
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetworkDomains,
			Reason: "network by domain is not implemented on macOS: the command runs without network"})
	}
	paths, err := canonicalPolicy(pol, opts.Paths)
	if err != nil {
		return nil, err
	}
	p.Masked = paths.masked
	var down []report.Downgrade
	paths.globs, down = canonicalGlobs(pol, opts.Paths)
	p.Downgrades = append(p.Downgrades, down...)
	p.Profile, p.Params = buildProfile(pol, paths)
	return p, nil
}

// policyPaths are a Policy's paths as Seatbelt will match them.
type policyPaths struct {
	readAll  bool
	read     []string
	write    []string
	readOnly []string
	masked   []string
	devices  []string
	globs    []seatbeltGlob
}

func canonicalPolicy(pol policy.Policy, m PathMode) (policyPaths, error) {
	var out policyPaths
	var err error
	one := func(field string, in []string) []string {
		var res []string
		for _, p := range in {
			c, cerr := canonical(p, m)
			if cerr != nil && err == nil {
				err = fmt.Errorf("compile %s: %w", field, cerr)
			}
			if cerr == nil && !slices.Contains(res, c) {
				res = append(res, c)
			}
		}
		return res
	}
	names := func(field string, in []string) []string {
		var res []string
		for _, p := range in {
			cs, cerr := canonicalNames(p, m)
			if cerr != nil && err == nil {
				err = fmt.Errorf("compile %s: %w", field, cerr)
			}
			for _, c := range cs {
				if !slices.Contains(res, c) {
					res = append(res, c)
				}
			}
		}
		return res
	}
	out.readAll = slices.Contains(pol.ReadRoots, "/")
	if !out.readAll {
		out.read = one("read_roots", pol.ReadRoots)
	}
	out.write = one("write_roots", pol.WriteRoots)
	out.readOnly = names("read_only", pol.CarveOuts)
	out.masked = names("masked", pol.Masked)
	out.devices = one("devices", pol.Devices)
	return out, err
}

// Degraded is what the plan could not apply: its Downgrades.
func (p *Plan) Degraded() []report.Downgrade { return p.Downgrades }

// Enforcement describes the plan as applied, for the report.
func (p *Plan) Enforcement() report.Enforcement {
	e := report.Enforcement{Platform: "darwin", Launch: p.Launch, NewSession: true, ClosedFDs: true}
	if p.Launch == LaunchDirect {
		return e
	}
	e.MaskedPaths = p.Masked
	return e
}

// Command returns the program and argv that run path (with argv[1:]) under
// the plan: sandbox-exec -p PROFILE -D NAME=VALUE... -- path args..., or the
// command itself for LaunchDirect.
//
// IMPORTANT: sandbox-exec execs its first operand with execvp, which makes it
// argv[0] too: the command sees its absolute path as argv[0], not the name
// the caller gave (bash's $0 reads /bin/bash rather than bash).
func (p *Plan) Command(path string, argv []string) (string, []string) {
	if p.Launch == LaunchDirect {
		return path, argv
	}
	args := []string{SandboxExec, "-p", p.Profile}
	for _, prm := range p.Params {
		args = append(args, "-D", prm.Name+"="+prm.Value)
	}
	args = append(args, "--", path)
	if len(argv) > 1 {
		args = append(args, argv[1:]...)
	}
	return SandboxExec, args
}

// String renders the plan as stable text for `sbx explain` and golden tests:
// the launch, the parameters, then the profile exactly as passed with -p.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nlaunch: %s\n", p.Policy.Mode, p.Launch)
	if p.Launch == LaunchDirect {
		b.WriteString("no restrictions (danger-full-access): no sandbox-exec, no profile\n")
	} else {
		fmt.Fprintf(&b, "paths: %s\nnetwork: %s\n", p.Paths, p.Policy.Network)
		for _, prm := range p.Params {
			fmt.Fprintf(&b, "param: -D %s=%s\n", prm.Name, prm.Value)
		}
	}
	for _, d := range p.Downgrades {
		fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
	}
	if p.Launch != LaunchDirect {
		b.WriteString("profile:\n")
		b.WriteString(p.Profile)
	}
	return b.String()
}
