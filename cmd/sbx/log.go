package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

func init() {
	register("log", command{summary: "show or verify the durable session log of sbx serve", run: logCmd})
}

const logUsage = `Usage:
  sbx log show [--json] DIR
  sbx log verify [--json] DIR

DIR is a state directory of sbx serve (its --state-dir): one SESSION_ID.log
per session, each an append-only sequence of framed records (docs/log.md).
"show" prints every session's records and what a restart would settle (the
pending approvals, which settle cancelled, and the open turns, which are
closed); "verify" prints only a summary and the problems. Both replay the
log exactly as the server does and list every problem: a torn or corrupt
last record (dropped), damage before the end (replay of that session stops
there), a record that breaks the session's rules (rejected, not applied).
Neither changes the log.

Exit status: 0 when the log is clean, 1 when there are problems (listed),
125 on bad usage or a DIR that cannot be read.

Examples:
  sbx log verify ~/.local/state/sbx
  sbx log show --json ~/.local/state/sbx

`

const logShowUsage = `Usage: sbx log show [--json] DIR

Prints every session of DIR: its records (seq, time, type, data), the
approvals still pending and the turns still open, then the problems.
Exit status: 0 clean, 1 problems, 125 bad usage or DIR unreadable.

Flags:
`

const logVerifyUsage = `Usage: sbx log verify [--json] DIR

Replays DIR as sbx serve does at restart and prints how many sessions and
records it holds, and every problem.
Exit status: 0 clean, 1 problems, 125 bad usage or DIR unreadable.

Flags:
`

// ExitLogProblems is the status of sbx log show and verify when the log
// has problems.
const ExitLogProblems = 1

func logCmd(args []string, stdio Stdio) int {
	if len(args) == 0 {
		fmt.Fprintln(stdio.Err, "sbx log: want a subcommand, show or verify (see sbx log --help)")
		return ExitRefused
	}
	switch args[0] {
	case "show":
		return logShow(args[1:], stdio)
	case "verify":
		return logVerify(args[1:], stdio)
	case "-h", "-help", "--help":
		fmt.Fprint(stdio.Err, logUsage)
		return 0
	}
	fmt.Fprintf(stdio.Err, "sbx log: unknown subcommand %q (want show or verify)\n", args[0])
	return ExitRefused
}

// logParse parses the flags of show or verify and replays DIR.
func logParse(name, usage string, args []string, stdio Stdio) (asJSON bool, dir string, r logReplay, code int, ok bool) {
	fs := newFlagSet(name, usage, stdio)
	j := fs.Bool("json", false, "print JSON instead of text")
	if code, ok := fs.parse(args); !ok {
		return false, "", r, code, false
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stdio.Err, "sbx %s: want one DIR, got %d arguments (flags go before DIR; see sbx %s --help)\n", name, fs.NArg(), name)
		return false, "", r, ExitRefused, false
	}
	dir = fs.Arg(0)
	sessions, problems, err := journal.Replay(dir)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx %s: DIR: %v\n", name, err)
		return false, "", r, ExitRefused, false
	}
	return *j, dir, logReplay{sessions: sessions, problems: problems}, 0, true
}

type logReplay struct {
	sessions []journal.Session
	problems []journal.Problem
}

func (r logReplay) status() int {
	if len(r.problems) > 0 {
		return ExitLogProblems
	}
	return 0
}

func (r logReplay) records() int {
	n := 0
	for _, s := range r.sessions {
		n += len(s.Records)
	}
	return n
}

// problemsJSON is never null: a client reads [] as "no problems".
func (r logReplay) problemsJSON() []journal.Problem {
	if r.problems == nil {
		return []journal.Problem{}
	}
	return r.problems
}

// logSession is a session in the --json output of show.
type logSession struct {
	SessionID        string           `json:"session_id"`
	Records          []journal.Record `json:"records"`
	PendingApprovals []string         `json:"pending_approvals"`
	OpenTurns        []string         `json:"open_turns"`
}

func logShow(args []string, stdio Stdio) int {
	asJSON, _, r, code, ok := logParse("log show", logShowUsage, args, stdio)
	if !ok {
		return code
	}
	if asJSON {
		out := struct {
			Sessions []logSession      `json:"sessions"`
			Problems []journal.Problem `json:"problems"`
		}{Sessions: []logSession{}, Problems: r.problemsJSON()}
		for _, s := range r.sessions {
			approvals, turns := journal.Pending(s)
			out.Sessions = append(out.Sessions, logSession{SessionID: s.ID, Records: s.Records,
				PendingApprovals: nonNil(approvals), OpenTurns: nonNil(turns)})
		}
		if c := writeJSON(stdio.Out, out); c != 0 {
			return c
		}
		return r.status()
	}
	for i, s := range r.sessions {
		if i > 0 {
			fmt.Fprintln(stdio.Out)
		}
		fmt.Fprintf(stdio.Out, "session %s (%d records)\n", s.ID, len(s.Records))
		tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
		for _, rec := range s.Records {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", rec.Seq, rec.Time.Format("2006-01-02T15:04:05.000Z07:00"), rec.Type, rec.Data)
		}
		tw.Flush()
		approvals, turns := journal.Pending(s)
		for _, a := range approvals {
			fmt.Fprintf(stdio.Out, "  pending: approval %s (settles cancelled at restart)\n", a)
		}
		for _, t := range turns {
			fmt.Fprintf(stdio.Out, "  open: turn %s (ended at restart)\n", t)
		}
	}
	printProblems(stdio, r.problems)
	return r.status()
}

func logVerify(args []string, stdio Stdio) int {
	asJSON, dir, r, code, ok := logParse("log verify", logVerifyUsage, args, stdio)
	if !ok {
		return code
	}
	if asJSON {
		out := struct {
			OK       bool              `json:"ok"`
			Sessions int               `json:"sessions"`
			Records  int               `json:"records"`
			Problems []journal.Problem `json:"problems"`
		}{len(r.problems) == 0, len(r.sessions), r.records(), r.problemsJSON()}
		if c := writeJSON(stdio.Out, out); c != 0 {
			return c
		}
		return r.status()
	}
	verdict := "ok"
	if n := len(r.problems); n > 0 {
		verdict = countOf(n, "problem")
	}
	fmt.Fprintf(stdio.Out, "%s: %s, %s: %s\n", dir, countOf(len(r.sessions), "session"), countOf(r.records(), "record"), verdict)
	printProblems(stdio, r.problems)
	return r.status()
}

func printProblems(stdio Stdio, ps []journal.Problem) {
	for _, p := range ps {
		fmt.Fprintf(stdio.Out, "problem: %s\n", p)
	}
}

func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
