//go:build windows

package windows

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// These tests run the real backend: a job, a write-restricted token and
// ACEs on real directories. They need a Windows machine (the windows11
// Vagrant box, see docs/platforms.md).

func cmdExe(t *testing.T) string {
	t.Helper()
	if c := os.Getenv("ComSpec"); c != "" {
		return c
	}
	return `C:\Windows\System32\cmd.exe`
}

// start compiles pol and starts argv under it in dir.
func start(t *testing.T, pol policy.Policy, dir string, argv ...string) (*Plan, *Process) {
	t.Helper()
	return startLimited(t, pol, report.Limits{}, dir, argv...)
}

func startLimited(t *testing.T, pol policy.Policy, l report.Limits, dir string, argv ...string) (*Plan, *Process) {
	t.Helper()
	opts, err := DefaultOptions()
	if err != nil {
		t.Fatal(err)
	}
	opts.Limits = l
	plan, err := Compile(pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := Start(plan, enforce.Command{Path: argv[0], Argv: argv, Dir: dir, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Close() })
	return plan, proc
}

// run runs a cmd.exe /c line in dir under pol and returns its exit code once
// the job and ACEs are gone.
func run(t *testing.T, pol policy.Policy, dir, line string) int {
	t.Helper()
	_, proc := start(t, pol, dir, cmdExe(t), "/c", line)
	code, err := proc.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return int(code)
}

func workspace(t *testing.T, mode profiles.Mode) (root, outside string, pol policy.Policy) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Build(policy.Request{Mode: mode, Cwd: root, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	return root, outside, pol
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestWorkspaceWriteConfinesWrites(t *testing.T) {
	root, outside, pol := workspace(t, profiles.WorkspaceWrite)
	if code := run(t, pol, root, `echo ok> inside.txt`); code != 0 || !exists(filepath.Join(root, "inside.txt")) {
		t.Errorf("write inside the root: exit %d, file exists %v", code, exists(filepath.Join(root, "inside.txt")))
	}
	if code := run(t, pol, root, `mkdir sub && echo ok> sub\deep.txt && del inside.txt`); code != 0 ||
		!exists(filepath.Join(root, "sub", "deep.txt")) || exists(filepath.Join(root, "inside.txt")) {
		t.Errorf("create, write and delete below the root: exit %d", code)
	}
	out := filepath.Join(outside, "outside.txt")
	if code := run(t, pol, root, `echo no> "`+out+`"`); code == 0 || exists(out) {
		t.Errorf("write outside the root: exit %d, file exists %v", code, exists(out))
	}
	git := filepath.Join(root, ".git", "config")
	if code := run(t, pol, root, `echo no> .git\config`); code == 0 || exists(git) {
		t.Errorf("write into the .git carve-out: exit %d, file exists %v", code, exists(git))
	}
	if code := run(t, pol, root, `rmdir .git`); code == 0 || !exists(filepath.Join(root, ".git")) {
		t.Errorf("delete the .git carve-out: exit %d", code)
	}
	if code := run(t, pol, root, `ren .git moved`); code == 0 || !exists(filepath.Join(root, ".git")) {
		t.Errorf("rename the .git carve-out: exit %d", code)
	}
}

func TestReadOnlyRefusesWritesAndAllowsReads(t *testing.T) {
	root, _, pol := workspace(t, profiles.ReadOnly)
	if err := os.WriteFile(filepath.Join(root, "in.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(t, pol, root, `type in.txt > NUL`); code != 0 {
		t.Errorf("read in read-only mode: exit %d", code)
	}
	if code := run(t, pol, root, `echo no> new.txt`); code == 0 || exists(filepath.Join(root, "new.txt")) {
		t.Errorf("write in read-only mode: exit %d", code)
	}
}

// TestACEsRevoked checks that no ACE for the call SID is left on the roots
// after the call.
func TestACEsRevoked(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	plan, proc := start(t, pol, root, cmdExe(t), "/c", "exit 0")
	if _, err := proc.Wait(); err != nil {
		t.Fatal(err)
	}
	call, _ := windows.StringToSid(plan.CallSID)
	if !hasACE(t, root, call) {
		t.Fatalf("no ACE for the call sid on %s while the call runs", root)
	}
	if err := proc.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, filepath.Join(root, ".git")} {
		if hasACE(t, p, call) {
			t.Errorf("ACE for the call sid left on %s", p)
		}
	}
}

func hasACE(t *testing.T, path string, sid *windows.SID) bool {
	t.Helper()
	acl, _, err := dacl(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; acl != nil && i < int(acl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(acl, uint32(i), &ace); err != nil {
			t.Fatal(err)
		}
		if (*windows.SID)(unsafe.Pointer(&ace.SidStart)).Equals(sid) {
			return true
		}
	}
	return false
}

// TestJobKillsGrandchild starts a grandchild that outlives the command and
// checks that closing the call kills it: it cannot break away from the job.
func TestJobKillsGrandchild(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	pidFile := filepath.Join(root, "pid.txt")
	ps := `$p = Start-Process -PassThru -WindowStyle Hidden ping -ArgumentList '-n','120','127.0.0.1'; ` +
		`[IO.File]::WriteAllText('` + pidFile + `', [string]$p.Id)`
	_, proc := start(t, pol, root, `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, "-NoProfile", "-Command", ps)
	if code, err := proc.Wait(); err != nil || code != 0 {
		t.Fatalf("powershell: exit %d, %v", code, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		t.Fatalf("grandchild %d is not running after its parent exited: %v", pid, err)
	}
	defer windows.CloseHandle(h)
	if ev, _ := windows.WaitForSingleObject(h, 0); ev == windows.WAIT_OBJECT_0 {
		t.Fatalf("grandchild %d already exited before the job was closed", pid)
	}
	if err := proc.Close(); err != nil {
		t.Fatal(err)
	}
	if ev, _ := windows.WaitForSingleObject(h, uint32((5 * time.Second).Milliseconds())); ev != windows.WAIT_OBJECT_0 {
		t.Errorf("grandchild %d survived the job's close", pid)
	}
}

func TestTimeoutKillExitCode(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	_, proc := start(t, pol, root, cmdExe(t), "/c", "ping -n 60 127.0.0.1 > NUL")
	time.AfterFunc(500*time.Millisecond, func() { proc.Kill() })
	code, err := proc.Wait()
	if err != nil || code != KillExitCode {
		t.Errorf("killed command: exit %d, %v; want %d", code, err, KillExitCode)
	}
}

// TestNetworkNotClaimed: the backend does not isolate the network, so an
// isolated policy must say so rather than claim it.
func TestNetworkNotClaimed(t *testing.T) {
	_, _, pol := workspace(t, profiles.WorkspaceWrite)
	plan, _ := start(t, pol, t.TempDir(), cmdExe(t), "/c", "exit 0")
	if plan.Enforcement().NetworkNamespace {
		t.Error("enforcement claims network isolation")
	}
	if !slices.ContainsFunc(plan.Downgrades, func(d report.Downgrade) bool { return d.Feature == "netns" }) {
		t.Errorf("isolated network not reported as degraded: %v", plan.Downgrades)
	}
}

func TestStartMissingCommand(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	opts, _ := DefaultOptions()
	plan, err := Compile(pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(plan, enforce.Command{Path: filepath.Join(root, "missing.exe"), Argv: []string{"missing.exe"}, Dir: root})
	if err == nil || ExecFailureStatus(err) != 127 {
		t.Fatalf("missing command: err = %v, status %d", err, ExecFailureStatus(err))
	}
	call, _ := windows.StringToSid(plan.CallSID)
	if hasACE(t, root, call) {
		t.Errorf("failed start left the call's ACE on %s", root)
	}
}

// TestJobProcessLimit: with a cap of one process, the command cannot start a
// child; without it the same command can.
func TestJobProcessLimit(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	for _, tc := range []struct {
		pids   int
		wantOK bool
	}{{0, true}, {1, false}} {
		_, proc := startLimited(t, pol, report.Limits{Pids: tc.pids}, root, cmdExe(t), "/c", cmdExe(t)+" /c exit 0")
		code, err := proc.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if (code == 0) != tc.wantOK {
			t.Errorf("pids %d: child start exit %d, want success %v", tc.pids, code, tc.wantOK)
		}
		if r := proc.Resources(report.Limits{Pids: tc.pids}); r.PeakMemorySource != "job-object" || r.PeakMemoryBytes <= 0 {
			t.Errorf("pids %d: resources %+v: no peak memory from the job", tc.pids, r)
		}
	}
}

// TestJobMemoryLimit: a tree capped at 256 MiB of committed memory cannot
// allocate 1 GiB (the allocation throws: exit 3), and without the cap the
// same command can (exit 0), so the cap, not powershell's start, decides.
func TestJobMemoryLimit(t *testing.T) {
	root, _, pol := workspace(t, profiles.WorkspaceWrite)
	ps := `try { $b = New-Object byte[] (1GB); $b[0] = 1; exit 0 } catch { exit 3 }`
	for _, tc := range []struct {
		mem  int64
		want uint32
	}{{0, 0}, {256 << 20, 3}} {
		_, proc := startLimited(t, pol, report.Limits{MemoryBytes: tc.mem}, root,
			`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, "-NoProfile", "-Command", ps)
		if code, err := proc.Wait(); err != nil || code != tc.want {
			t.Errorf("1 GiB under a %d-byte job cap: exit %d, %v; want %d", tc.mem, code, err, tc.want)
		}
	}
}
