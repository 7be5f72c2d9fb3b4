package shells

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/quick"
)

func fakeLook(installed ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, i := range installed {
			if i == name {
				return "/bin/" + name, nil
			}
		}
		return "", exec.ErrNotFound
	}
}

func TestCommand(t *testing.T) {
	look := fakeLook("bash", "dash", "zsh", "pwsh")
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"bash no profile", Spec{Kind: Bash, Script: "echo hi"}, []string{"/bin/bash", "--noprofile", "--norc", "-c", "echo hi"}},
		{"bash login", Spec{Kind: Bash, Script: "x", Login: true}, []string{"/bin/bash", "--login", "-c", "x"}},
		{"sh falls to dash", Spec{Kind: Sh, Script: "x"}, []string{"/bin/dash", "-c", "x"}},
		{"zsh", Spec{Kind: Zsh, Script: "x"}, []string{"/bin/zsh", "-f", "-c", "x"}},
		{"pwsh", Spec{Kind: Pwsh, Script: "Get-Date"}, []string{"/bin/pwsh", "-NoLogo", "-NonInteractive", "-NoProfile", "-Command", "Get-Date"}},
		{"explicit path", Spec{Kind: Bash, Script: "x", Path: "/opt/bash"}, []string{"/opt/bash", "--noprofile", "--norc", "-c", "x"}},
		{"cmd", Spec{Kind: Cmd, Script: "dir", Path: `C:\Windows\System32\cmd.exe`}, []string{`C:\Windows\System32\cmd.exe`, "/d", "/s", "/c", "dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Command(tt.spec, look)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCommandRefusals(t *testing.T) {
	if _, err := Command(Spec{Kind: "fish", Script: "x"}, fakeLook()); err == nil {
		t.Fatal("unknown kind accepted")
	}
	_, err := Command(Spec{Kind: Pwsh, Script: "x"}, fakeLook("bash"))
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("missing pwsh: got %v, want ErrNotInstalled", err)
	}
}

// TestRealShells runs every installed shell for real; a kind that is not
// installed here is skipped with its name.
func TestRealShells(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shells are tested on Unix")
	}
	for _, k := range []Kind{Bash, Sh, Zsh, Pwsh} {
		t.Run(string(k), func(t *testing.T) {
			argv, err := Command(Spec{Kind: k, Script: "echo sbx-$((40+2))"}, nil)
			if k == Pwsh {
				argv, err = Command(Spec{Kind: k, Script: "Write-Output ('sbx-' + (40+2))"}, nil)
			}
			if errors.Is(err, ErrNotInstalled) {
				t.Skipf("%s is not installed on this machine", k)
			}
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "BASH_ENV=/nonexistent-should-not-be-read")
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != "sbx-42\n" {
				t.Fatalf("%q: output %q, err %v", argv, out, err)
			}
		})
	}
}

func TestWindowsQuoting(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"", `""`},
		{"a b", `"a b"`},
		{`a"b`, `"a\"b"`},
		{`C:\Program Files\x\`, `"C:\Program Files\x\\"`},
		{`back\\"quote`, `"back\\\\\"quote"`},
		{`no\space\`, `no\space\`},
	}
	for _, tt := range tests {
		if got := QuoteWindowsArg(tt.in); got != tt.want {
			t.Errorf("QuoteWindowsArg(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestWindowsRoundTrip: whatever argv goes in, the documented splitting
// rules give the same argv back.
func TestWindowsRoundTrip(t *testing.T) {
	f := func(argv []string) bool {
		// A quote cannot be expressed in a program name (nor is one in a
		// Windows file name); cmd.exe has its own rules (TestCmdCommandLine).
		if len(argv) == 0 || strings.Contains(argv[0], `"`) || isCmd(argv[0]) {
			return true
		}
		got := SplitWindowsCommandLine(WindowsCommandLine(argv))
		return reflect.DeepEqual(got, argv)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{`a\\`, `"`, ` `, `\"\`}, {"x", ""}, {`C:\Program Files\x\`, "a"}, {"", "b"}, {"prog\tname", `c\`}} {
		if got := SplitWindowsCommandLine(WindowsCommandLine(argv)); !reflect.DeepEqual(got, argv) {
			t.Fatalf("round trip %q -> %q", argv, got)
		}
	}
}

// TestWindowsProgramName: CommandLineToArgvW takes the program name without
// escapes, so a trailing backslash must not be doubled.
func TestWindowsProgramName(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{`C:\Program Files\PowerShell\7\pwsh.exe`, "-c", "x"}, `"C:\Program Files\PowerShell\7\pwsh.exe" -c x`},
		{[]string{`C:\dir with space\`, "a"}, `"C:\dir with space\" a`},
		{[]string{"", "a"}, `"" a`},
	}
	for _, tt := range tests {
		if got := WindowsCommandLine(tt.argv); got != tt.want {
			t.Errorf("WindowsCommandLine(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}

// TestCmdCommandLine: cmd.exe runs what follows /c verbatim once its outer
// quotes are stripped, so the script must not be escaped by
// CommandLineToArgvW rules (cmd would see the backslashes).
func TestCmdCommandLine(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"Args for Cmd", append([]string{`C:\Windows\System32\cmd.exe`}, Args(Spec{Kind: Cmd, Script: `echo "a b" & dir "C:\x y\"`})...),
			`C:\Windows\System32\cmd.exe /d /s /c "echo "a b" & dir "C:\x y\""`},
		{"upper case and /K", []string{`CMD.EXE`, "/K", "echo", "hi there"}, `CMD.EXE /K "echo hi there"`},
		{"no extension, switches before /c quoted as usual", []string{`C:\w\cmd`, "/e:on", "/c", `set "x=1"`}, `C:\w\cmd /e:on /c "set "x=1""`},
		{"empty script", []string{"cmd.exe", "/c"}, `cmd.exe /c ""`},
		{"not cmd: /c is an ordinary argument", []string{"cmdx.exe", "/c", `a"b`}, `cmdx.exe /c "a\"b"`},
	}
	for _, tt := range tests {
		if got := WindowsCommandLine(tt.argv); got != tt.want {
			t.Errorf("%s: WindowsCommandLine(%q) =\n%s\nwant\n%s", tt.name, tt.argv, got, tt.want)
		}
	}
}
