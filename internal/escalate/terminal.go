package escalate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// DefaultTTY is the controlling terminal TerminalApprover opens. It is opened
// directly, not through stdin/stdout, so that the prompt works when the
// command's stdio is redirected, and a pipe on stdin cannot answer it.
const DefaultTTY = "/dev/tty"

// TerminalApprover asks a person on the controlling terminal, for sbx run by
// hand: it prints the request and "allow once? [y/N]". "y" or "yes" (any case)
// is allowed-once; anything else, including an empty line or end of input, is
// rejected. Without a terminal (none attached, or an OS without /dev/tty) the
// outcome is unavailable.
type TerminalApprover struct {
	// TTY, when set, is used instead of opening Path (tests).
	TTY io.ReadWriter
	// Path is the terminal device; "" means DefaultTTY.
	Path string
}

// Approve prompts once and reads one line.
func (t TerminalApprover) Approve(ctx context.Context, req ApprovalRequest) (Outcome, error) {
	rw := t.TTY
	if rw == nil {
		path := t.Path
		if path == "" {
			path = DefaultTTY
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return Unavailable, nil
		}
		defer f.Close()
		// Closing the terminal unblocks a pending read when ctx ends.
		stop := context.AfterFunc(ctx, func() { f.Close() })
		defer stop()
		rw = f
	}
	if _, err := io.WriteString(rw, prompt(req)); err != nil {
		return Unavailable, nil
	}
	line, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		if ctx.Err() != nil {
			return "", contextDenial(ctx)
		}
		return "", fmt.Errorf("%w: read terminal: %v", ErrApproverFailed, err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return AllowedOnce, nil
	}
	return Rejected, nil
}

// prompt renders the request. Every value comes from the model or the
// caller, so control characters are replaced: a justification must not be
// able to move the cursor, reorder the text (bidi controls) or rewrite the
// question.
func prompt(req ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sbx: call %s (%s) in %s asks ", clean(req.CallID), clean(req.Tool), clean(req.Cwd))
	switch {
	case req.TargetMode != nil:
		fmt.Fprintf(&b, "to run under %s\n", req.TargetMode)
	case req.AdditionalPermissions != nil:
		p := req.AdditionalPermissions
		b.WriteString("for additional permissions:\n")
		if p.NetworkEnabled() {
			b.WriteString("  network: enabled\n")
		}
		for _, d := range p.AllowedDomains() {
			fmt.Fprintf(&b, "  network domain: %s\n", clean(d))
		}
		for _, d := range p.DeniedDomains() {
			fmt.Fprintf(&b, "  denied domain: %s\n", clean(d))
		}
		if p.AllowPrivateAddresses() {
			b.WriteString("  private addresses: allowed\n")
		}
		for _, w := range p.WritePaths() {
			fmt.Fprintf(&b, "  write: %s\n", clean(w))
		}
		for _, r := range p.ReadPaths() {
			fmt.Fprintf(&b, "  read: %s\n", clean(r))
		}
	}
	for _, c := range req.CapAdd {
		// A capability is a widening of its own: shown whatever else is.
		fmt.Fprintf(&b, "  keep capability: %s\n", clean(c))
	}
	for _, c := range req.Create {
		// sbx makes these before the command runs, if allowed: a change
		// on disk the person should know of before saying yes.
		fmt.Fprintf(&b, "  create (missing, made as you): %s\n", clean(c))
	}
	if req.Command != nil {
		// The one question's command, as every answerer is shown it: each
		// argument cleaned and quoted, so that one cannot pose as two.
		q := make([]string, len(req.Command))
		for i, arg := range req.Command {
			q[i] = strconv.Quote(clean(arg))
		}
		fmt.Fprintf(&b, "  command: %s\n", strings.Join(q, " "))
	}
	if req.Justification != "" {
		fmt.Fprintf(&b, "  justification: %s\n", clean(req.Justification))
	}
	b.WriteString("allow once? [y/N] ")
	return b.String()
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
}
