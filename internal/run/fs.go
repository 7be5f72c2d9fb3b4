package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// FSStageCommand is the hidden subcommand `sbx fs` runs inside the
// sandbox: it performs the one change of its spec with plain system calls
// (package fsop), so Landlock, the read-only mounts and the denial
// supervisor judge it exactly as they judge a command, and prints the
// outcome as one wire.FSStageResult.
const FSStageCommand = "__fs"

// FSStageMain is the FSStageCommand stage: args is what follows the
// subcommand (one JSON fsop.Op). It performs the change, reading its
// content from stdin where the op takes one, writes one wire.FSStageResult to
// stdout and returns the exit status (125: args is not a stage's).
func FSStageMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var op fsop.Op
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &op) != nil {
		fmt.Fprintln(stderr, "sbx __fs: internal subcommand of sbx fs")
		return 125
	}
	var in io.Reader = strings.NewReader("")
	if op.Kind.TakesInput() {
		in = stdin
	}
	res := wire.FSStageResult{OK: true}
	if err := op.Run(in); err != nil {
		res = wire.FSStageResult{Error: err.Error()}
	}
	b, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "sbx __fs: %v\n", err)
		return 125
	}
	stdout.Write(append(b, '\n'))
	return 0
}

// FSOptions are RunFS's: see Options.
type FSOptions struct {
	// Form is the form of the call a retry repeats.
	Form call.RetryForm
	// Executable is the sbx binary that runs the stage.
	Executable   func() (string, error)
	Dispatch     func() error
	RelaySignals bool
}

// RunFS runs the FSStageCommand stage for op under the call req describes,
// with content as its stdin, and makes the result. The error is a refusal
// (exit 125): nothing ran.
func RunFS(ctx context.Context, req call.Request, op fsop.Op, content string, opt FSOptions) (wire.FSResult, error) {
	exe, err := opt.Executable()
	if err != nil {
		return wire.FSResult{}, wire.Internal(fmt.Errorf("executable: %w", err))
	}
	// The spec (argv[2]) is made once the policy is known.
	req.Command, req.Shell = []string{exe, FSStageCommand, ""}, nil
	p, err := call.Prepare(ctx, req)
	if err != nil {
		return wire.FSResult{}, err
	}
	if opt.Dispatch != nil {
		if err := opt.Dispatch(); err != nil {
			return wire.FSResult{}, err
		}
	}
	p.Call.ForwardSignals = opt.RelaySignals
	op.InPlace = inPlaceTargets(op, content, p.Call.Cmd.Dir, p.Call.Policy)
	spec, err := json.Marshal(op)
	if err != nil {
		return wire.FSResult{}, err
	}
	p.Call.Cmd.Argv[2] = string(spec)
	out, err := Capture(ctx, p, 0, IO{Stdin: content})
	if err != nil {
		// A required feature missing is still unsupported (ErrorFor
		// looks for it first); anything else is sbx's own failure.
		return wire.FSResult{}, wire.Internal(fmt.Errorf("fs helper: %w", err))
	}
	rep := wire.NewCallReport(p, out.Report, wire.FSStageOutcome(out.Stdout), opt.Form)
	res := wire.NewFSResult(rep, op.Kind, out.Stdout, out.Stderr)
	return res, nil
}

// inPlaceTargets are the existing files op replaces (write's path, copy's
// destination, the files a patch modifies) that the policy lets the call
// write but not create beside: a grant of the file alone, a carve-out.
// Those the helper writes in place, so that the first refusal it meets is
// the file's own and the retry asks for the file, the smallest grant, not
// its directory. Paths are resolved, as the checker and the helper see
// them; a path that does not resolve is a create and needs the directory.
func inPlaceTargets(op fsop.Op, input, cwd string, pol policy.Policy) []string {
	if pol.Unrestricted {
		return nil
	}
	var targets []string
	switch op.Kind {
	case fsop.Write:
		targets = []string{op.Path}
	case fsop.Copy:
		targets = []string{op.Dest}
	case fsop.ApplyPatch:
		patches, _ := fsop.ParsePatch(input)
		for _, p := range patches {
			if !p.IsNew() && !p.IsDelete() {
				targets = append(targets, p.Path())
			}
		}
	}
	chk := denial.NewChecker(pol, denial.Extra{})
	var out []string
	for _, t := range targets {
		if !filepath.IsAbs(t) {
			t = filepath.Join(cwd, t)
		}
		r, err := filepath.EvalSymlinks(t)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if !chk.Path(denial.Create, filepath.Join(filepath.Dir(r), ".sbx-fs")).Allowed {
			out = append(out, r)
		}
	}
	return out
}
