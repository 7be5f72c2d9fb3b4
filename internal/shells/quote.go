package shells

import "strings"

// WindowsCommandLine joins argv into one command line that CommandLineToArgvW
// (and the MSVC C runtime) splits back into exactly argv. Windows has no argv
// at the system call: every process gets one string and re-splits it, so each
// argument must be quoted by these rules: backslashes are literal unless they
// precede a double quote, where each pair becomes one backslash.
//
// Two parts follow other rules. The program name (argv[0]) is split without
// any escapes: it is quoted whole when it has a space or tab, and a double
// quote in it cannot be expressed (Windows file names cannot contain one).
// cmd.exe does not split its command line at all: after /c or /k it runs
// the rest as a cmd script, stripping the first and last quote when the rest
// starts with one. So for cmd.exe the arguments after /c or /k are joined
// with spaces as they are and wrapped in one pair of quotes, which cmd
// strips: the script reaches cmd byte for byte, whatever quotes, backslashes
// or metacharacters it holds.
func WindowsCommandLine(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	parts := []string{quoteProgramName(argv[0])}
	for i, a := range argv[1:] {
		if isCmd(argv[0]) && (strings.EqualFold(a, "/c") || strings.EqualFold(a, "/k")) {
			parts = append(parts, a, `"`+strings.Join(argv[i+2:], " ")+`"`)
			break
		}
		parts = append(parts, QuoteWindowsArg(a))
	}
	return strings.Join(parts, " ")
}

func quoteProgramName(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t") {
		return a
	}
	return `"` + a + `"`
}

// isCmd reports whether prog names cmd.exe (any case, with or without
// directory and extension).
func isCmd(prog string) bool {
	base := prog[strings.LastIndexAny(prog, `\/:`)+1:]
	return strings.EqualFold(base, "cmd") || strings.EqualFold(base, "cmd.exe")
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

// SplitWindowsCommandLine is the inverse of WindowsCommandLine for programs
// other than cmd.exe, following the documented CommandLineToArgvW rules: the
// program name up to the next quote (when it starts with one) or blank, then
// the arguments with their escapes. It exists to test the quoting, and for
// callers that must parse such lines.
func SplitWindowsCommandLine(line string) []string {
	if line == "" {
		return nil
	}
	var out []string
	i := 0
	if line[0] == '"' {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return []string{line[1:]}
		}
		out, i = append(out, line[1:1+end]), end+2
	} else {
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			return []string{line}
		}
		out, i = append(out, line[:end]), end
	}
	var cur strings.Builder
	inArg, inQuote := false, false
	for i < len(line) {
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
