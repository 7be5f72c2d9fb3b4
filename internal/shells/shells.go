package shells

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Kind is a shell family.
type Kind string

const (
	Bash       Kind = "bash"
	Sh         Kind = "sh"
	Zsh        Kind = "zsh"
	Pwsh       Kind = "pwsh"
	PowerShell Kind = "powershell"
	Cmd        Kind = "cmd"
)

// Kinds lists every kind, in the order Detect reports them.
var Kinds = []Kind{Bash, Sh, Zsh, Pwsh, PowerShell, Cmd}

// ErrNotInstalled is matched by the error Command returns when the shell's
// executable is not on PATH.
var ErrNotInstalled = errors.New("shell not installed")

// Spec is one script for one shell.
type Spec struct {
	Kind   Kind   `json:"kind"`
	Script string `json:"script"`
	// Login runs a login shell, which reads the profile files.
	Login bool `json:"login,omitempty"`
	// Path overrides the executable (absolute); empty: look Kind up on PATH.
	Path string `json:"path,omitempty" kind:"path"`
}

// executables are the names each kind is installed under, preferred first.
var executables = map[Kind][]string{
	Bash: {"bash"}, Sh: {"sh", "dash"}, Zsh: {"zsh"},
	Pwsh: {"pwsh"}, PowerShell: {"powershell.exe", "powershell"}, Cmd: {"cmd.exe", "cmd"},
}

// ParseKind validates the wire spelling of a shell kind.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown shell %q (want %s)", s, strings.Join(names, ", "))
}

// Lookup returns the executable for k, using lookPath (exec.LookPath when nil).
func Lookup(k Kind, lookPath func(string) (string, error)) (string, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	names, ok := executables[k]
	if !ok {
		return "", fmt.Errorf("unknown shell %q", k)
	}
	for _, n := range names {
		if p, err := lookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w (looked for %s on PATH)", k, ErrNotInstalled, strings.Join(names, ", "))
}

// Detect lists the installed shells.
func Detect(lookPath func(string) (string, error)) map[Kind]string {
	out := map[Kind]string{}
	for _, k := range Kinds {
		if p, err := Lookup(k, lookPath); err == nil {
			out[k] = p
		}
	}
	return out
}

// Command returns the argv that runs s.Script in s.Kind.
func Command(s Spec, lookPath func(string) (string, error)) ([]string, error) {
	if _, err := ParseKind(string(s.Kind)); err != nil {
		return nil, err
	}
	path := s.Path
	if path == "" {
		var err error
		if path, err = Lookup(s.Kind, lookPath); err != nil {
			return nil, err
		}
	}
	return append([]string{path}, Args(s)...), nil
}

// Args returns the arguments after the executable for s.
func Args(s Spec) []string {
	switch s.Kind {
	case Bash:
		if s.Login {
			return []string{"--login", "-c", s.Script}
		}
		return []string{"--noprofile", "--norc", "-c", s.Script}
	case Zsh:
		if s.Login {
			return []string{"-l", "-c", s.Script}
		}
		// -f: no startup files besides /etc/zshenv, which zsh always reads.
		return []string{"-f", "-c", s.Script}
	case Pwsh, PowerShell:
		a := []string{"-NoLogo", "-NonInteractive"}
		if !s.Login {
			a = append(a, "-NoProfile")
		}
		return append(a, "-Command", s.Script)
	case Cmd:
		// /d: no AutoRun commands from the registry; /s /c: run the rest
		// verbatim, which is why the script must not be quoted again.
		return []string{"/d", "/s", "/c", s.Script}
	default: // Sh
		if s.Login {
			return []string{"-l", "-c", s.Script}
		}
		return []string{"-c", s.Script}
	}
}
