package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

func init() {
	register("fs", command{summary: "make one file-system change (write, append, mkdir, remove, move, copy, chmod, apply-patch) in the sandbox", run: fsCmd})
}

// ExitDenied is the exit status of `sbx fs` when the sandbox denied the
// change (the report has the denial and the retry hint).
const ExitDenied = wire.ExitDenied

const fsUsage = `Usage: sbx fs [run flags] [--json] OPERATION ARG...

Makes one file-system change inside the sandbox that "sbx run" with the same
flags would make, in a sandboxed helper (sbx itself, re-executed), so the
sandbox judges it exactly as it judges a command's. Relative paths are
relative to --cwd.

Operations:
  write PATH         stdin becomes PATH's content: a temp file in PATH's
                     directory, fsync, rename over PATH (atomic); an existing
                     file keeps its mode, a new one gets 0644 minus the umask;
                     the directory must exist. An existing file the sandbox
                     lets the call write but not create beside (a file grant,
                     a carve-out) is written in place (not atomic)
  append PATH        stdin is appended to PATH (created if missing)
  mkdir [-p] PATH    make a directory (-p: and its parents; no error if it exists)
  remove [-r] PATH   remove a file or an empty directory (-r: a tree)
  move SRC DST       rename SRC to DST (DST is the new path, not a directory to
                     move into); across file systems a file is copied
  copy [-r] SRC DST  copy a file like write does (-r: a directory tree, to a
                     DST that does not exist)
  chmod MODE PATH    set the octal MODE (e.g. 644, 0755)
  apply-patch        apply the unified diff on stdin (git's or diff -u;
                     a/ and b/ prefixes stripped; new files from /dev/null,
                     deletions to /dev/null), all or nothing: when a hunk does
                     not apply or the sandbox denies any part, no file changes

Examples:
  echo hi | sbx fs --mode workspace-write write notes.txt
  sbx fs --mode workspace-write remove -r build
  git diff | sbx fs --mode workspace-write --cwd ../other apply-patch
  sbx fs --mode workspace-write --json chmod 755 run.sh

Output: nothing on success. On failure one line on stderr, the message of
the system call (or of the patch) unchanged; when the sandbox denied it, also
the denials and the retry command (the same sbx fs call with the smallest
escalation that lets it through). --json prints the report of sbx run --report
plus "op", "ok" and "error": {"kind": "denied"|"failed", "message"} instead.

Exit status: 0 done; 1 failed for an ordinary reason (a missing file, file
permissions, a patch that does not apply); 3 denied by the sandbox (only when
the sandbox reported the denial: without denial reports a refusal is exit 1);
125 bad flags or arguments, nothing run (one line on stderr naming the
argument; with --json also {"error": MESSAGE, "error_detail": {...}} on stdout,
as sbx exec refuses).

A denial, and its retry (fill in --justification; an approver is asked):
  $ echo x | sbx fs --mode workspace-write write /var/tmp/out/f
  sbx fs: write /var/tmp/out/f: permission denied
  sbx: denied create /var/tmp/out/.f.sbx-1c2d3e4f5a6b.tmp (openat, pid 7): outside the writable roots
  sbx: retry: sbx fs --mode workspace-write --sandbox-permissions with_additional_permissions --allow-write /var/tmp/out --justification '' -- write /var/tmp/out/f
A new file is made through a temp file in its directory, so the denial is
that temp file's create and the retry grants the directory; for an existing
file the call may not create beside, the denial and the retry are the file's.

Flags (the run flags; --shell, -c and --login are refused: no command runs):
`

// fsResult is the `sbx fs --json` output and the `sbx exec` result of an
// "fs" request (wire.FSResult).
type fsResult = wire.FSResult

func fsCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("fs", fsUsage, stdio)
	var rf runFlags
	rf.register(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print the report and the outcome as one JSON object")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	refuse := func(err error) int {
		fmt.Fprintf(stdio.Err, "sbx fs: %v\n", err)
		if *asJSON {
			// The refusal object of sbx exec, so a caller reading JSON
			// always gets one.
			writeJSON(stdio.Out, newRefusal(err))
		}
		return ExitRefused
	}
	op, err := parseFSArgs(fs.Args())
	if err != nil {
		return refuse(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"shell", "c", "login"} {
		if set[name] {
			return refuse(&strictjson.FieldError{Field: flagName(name), Err: errors.New("sbx fs runs no command")})
		}
	}
	req, err := rf.request(nil, set)
	if err != nil {
		return refuse(err)
	}
	req.Escalation.Tool = "fs"
	var content string
	if op.Kind.TakesInput() {
		b, err := io.ReadAll(stdio.In)
		if err != nil {
			return refuse(internalError{fmt.Errorf("read stdin: %w", err)})
		}
		content = string(b)
	}
	res, err := runFS(req, op, content, call.RetryForm{CommandLine: retryCommandLine("fs", fs.FlagSet, args)})
	if err != nil {
		return refuse(call.Render(err, call.CLI))
	}
	if *asJSON {
		if c := writeJSON(stdio.Out, res); c != 0 {
			return c
		}
		return res.ExitCode
	}
	if res.Error != nil {
		fmt.Fprintf(stdio.Err, "sbx fs: %s\n", res.Error.Message)
		if res.Error.Kind == fsDenied {
			explainDenials(stdio.Err, res.Denials, res.DenialsDropped, res.Retry)
		}
	}
	return res.ExitCode
}

// parseFSArgs reads OPERATION ARG... into an Op. Errors name the argument.
func parseFSArgs(args []string) (fsop.Op, error) {
	kinds := make([]string, len(fsop.Kinds))
	for i, k := range fsop.Kinds {
		kinds[i] = string(k)
	}
	if len(args) == 0 {
		return fsop.Op{}, fmt.Errorf("OPERATION: missing (one of %s; see sbx fs --help)", strings.Join(kinds, ", "))
	}
	op := fsop.Op{Kind: fsop.Kind(args[0])}
	if !slices.Contains(fsop.Kinds, op.Kind) {
		return op, fmt.Errorf("OPERATION: unknown operation %q (one of %s)", args[0], strings.Join(kinds, ", "))
	}
	var pos []string
	rest := false
	for _, a := range args[1:] {
		switch {
		case rest || a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		case a == "--":
			rest = true
		case (a == "-p" || a == "--parents") && op.Kind == fsop.Mkdir:
			op.Parents = true
		case (a == "-r" || a == "--recursive") && (op.Kind == fsop.Remove || op.Kind == fsop.Copy):
			op.Recursive = true
		default:
			return op, fmt.Errorf("%s: unknown option %q (see sbx fs --help)", op.Kind, a)
		}
	}
	names := fsArgNames[op.Kind]
	if len(pos) != len(names) {
		return op, fmt.Errorf("%s takes %s, got %d argument(s) (see sbx fs --help)", op.Kind, fsArgList(names), len(pos))
	}
	for i, n := range names {
		switch n {
		case "PATH", "SRC":
			op.Path = pos[i]
		case "DST":
			op.Dest = pos[i]
		case "MODE":
			op.Mode = pos[i]
		}
	}
	var ae *fsop.ArgError
	if err := op.Validate(); errors.As(err, &ae) {
		return op, fmt.Errorf("%s: %s: %v", op.Kind, fsArgName(op.Kind, ae.Field), ae.Err)
	} else if err != nil {
		return op, err
	}
	return op, nil
}

// fsArgNames are the positional arguments of each operation.
var fsArgNames = map[fsop.Kind][]string{
	fsop.Write: {"PATH"}, fsop.Append: {"PATH"}, fsop.Mkdir: {"PATH"}, fsop.Remove: {"PATH"},
	fsop.Move: {"SRC", "DST"}, fsop.Copy: {"SRC", "DST"}, fsop.Chmod: {"MODE", "PATH"}, fsop.ApplyPatch: nil,
}

func fsArgList(names []string) string {
	if len(names) == 0 {
		return "no arguments (the patch comes on stdin)"
	}
	return strings.Join(names, " ")
}

// fsArgName is the command-line name of an Op field.
func fsArgName(k fsop.Kind, field string) string {
	switch {
	case field == "dest":
		return "DST"
	case field == "mode":
		return "MODE"
	case field == "path" && (k == fsop.Move || k == fsop.Copy):
		return "SRC"
	case field == "path":
		return "PATH"
	}
	return field
}

// selfExecutable is the sbx binary the helper runs; tests point it at a
// link named sbx to the test binary, which testscript runs as sbx.
var selfExecutable = os.Executable

// runFS runs the __fs stage for op under the call req describes, with
// content as its stdin, and makes the result; form is the form of the
// call a retry repeats. The error is a refusal (exit 125): nothing ran.
func runFS(req call.Request, op fsop.Op, content string, form call.RetryForm) (fsResult, error) {
	return run.RunFS(context.Background(), req, op, content, run.FSOptions{
		Form: form, Executable: func() (string, error) { return selfExecutable() }, RelaySignals: true,
	})
}
