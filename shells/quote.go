package shells

import "strings"

// WindowsCommandLine joins argv into one command line that CommandLineToArgvW
// (and the MSVC C runtime) splits back into exactly argv. Windows has no argv
// at the system call: every process gets one string and re-splits it, so each
// argument must be quoted by these rules: backslashes are literal unless they
// precede a double quote, where each pair becomes one backslash.
func WindowsCommandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = QuoteWindowsArg(a)
	}
	return strings.Join(parts, " ")
}

// QuoteWindowsArg quotes one argument for WindowsCommandLine.
func QuoteWindowsArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n\v\"") {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(a); i++ {
		switch c := a[i]; c {
		case '\\':
			slashes++
		case '"':
			// Double the run of backslashes before a quote, then escape it.
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
			b.WriteByte('"')
			slashes = 0
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
			b.WriteByte(c)
			slashes = 0
		}
	}
	// Backslashes before the closing quote are doubled too.
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// SplitWindowsCommandLine is the inverse of WindowsCommandLine, following
// the documented CommandLineToArgvW rules for arguments after the first.
// It exists to test the quoting, and for callers that must parse such lines.
func SplitWindowsCommandLine(line string) []string {
	var out []string
	var cur strings.Builder
	inArg, inQuote := false, false
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(line) && line[i] == '\\' {
				n++
				i++
			}
			inArg = true
			if i < len(line) && line[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
					i++
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
			}
			continue
		case c == '"':
			inArg = true
			if inQuote && i+1 < len(line) && line[i+1] == '"' {
				// "" inside quotes is a literal quote (post-2008 CRT rule).
				cur.WriteByte('"')
				i += 2
				continue
			}
			inQuote = !inQuote
		case (c == ' ' || c == '\t') && !inQuote:
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			inArg = true
			cur.WriteByte(c)
		}
		i++
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out
}
