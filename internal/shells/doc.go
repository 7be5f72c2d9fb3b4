// Package shells turns a shell kind and a script into the argv that runs it:
// bash, sh, zsh and pwsh on every OS, cmd.exe and powershell.exe on Windows,
// and quotes arguments for Windows command lines.
//
//	argv, err := shells.Command(shells.Spec{Kind: shells.Bash, Script: "make test"})
//	// argv: [/usr/bin/bash --noprofile --norc -c make test]
//
// Guarantees: no profile or rc file is read unless Login is set (a login shell
// reads its profile by definition); a shell that is not installed is an
// ErrNotInstalled error naming it, never a fallback to another shell.
package shells
