//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
)

// ErrStart wraps errors of the process creation itself (command missing, not
// executable); errors without it are the sandbox's own setup.
var ErrStart = errors.New("start")

// KillExitCode is the exit code TerminateJobObject gives every process of a
// call sbx kills (timeout, interrupt of sbx): 128+9, what a shell reports for
// SIGKILL, so callers see the same code on every platform.
const KillExitCode = 137

// Process is a started call: its first process, the job holding its tree,
// and the ACEs to revoke when it ends.
type Process struct {
	Pid     int
	process windows.Handle
	job     windows.Handle
	grants  *grants
}

// Start applies the plan's ACEs, creates the job and the token, and starts
// the command suspended, in the job, then resumes it. On an error nothing of
// the plan is left applied and nothing runs.
func Start(plan *Plan, cmd enforce.Command) (*Process, error) {
	if len(cmd.Argv) == 0 {
		return nil, fmt.Errorf("%w: empty argv", ErrStart)
	}
	job, err := newJob(plan.Job)
	if err != nil {
		return nil, err
	}
	p := &Process{job: job}
	var tok windows.Token
	if plan.Launch == LaunchRestrictedToken {
		if tok, err = restrictedToken(plan); err != nil {
			p.Close()
			return nil, err
		}
		defer tok.Close()
		if p.grants, err = applyACEs(plan); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := p.create(tok, cmd); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return p, nil
}

// newJob makes the job: kill on close, die on unhandled exception (no error
// dialog waiting for a person), no breakaway, the plan's limits and the UI
// restrictions.
func newJob(j Job) (windows.Handle, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("CreateJobObject: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = j.LimitFlags()
	info.BasicLimitInformation.ActiveProcessLimit = j.ActiveProcessLimit
	info.JobMemoryLimit = uintptr(j.JobMemoryLimit)
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("SetInformationJobObject JobObjectExtendedLimitInformation: %w", err)
	}
	ui := windows.JOBOBJECT_BASIC_UI_RESTRICTIONS{UIRestrictionsClass: UIRestrictions}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectBasicUIRestrictions,
		uintptr(unsafe.Pointer(&ui)), uint32(unsafe.Sizeof(ui))); err != nil {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("SetInformationJobObject JobObjectBasicUIRestrictions: %w", err)
	}
	return h, nil
}

// create starts cmd with tok (sbx's own token when 0), suspended, in a new
// process group (so Ctrl-Break reaches the command, not sbx), inheriting only
// its three stdio handles; assigns it to the job; then resumes it.
func (p *Process) create(tok windows.Token, cmd enforce.Command) error {
	stdio, closeStdio, err := inheritableStdio(cmd)
	if err != nil {
		return err
	}
	defer closeStdio()
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return fmt.Errorf("InitializeProcThreadAttributeList: %w", err)
	}
	defer attrs.Delete()
	// Each stdio handle is a fresh duplicate, so the list never repeats one
	// (the attribute refuses repeats) even when two of them are one file.
	list := stdio[:]
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&list[0]), uintptr(len(list))*unsafe.Sizeof(list[0])); err != nil {
		return fmt.Errorf("UpdateProcThreadAttribute: %w", err)
	}
	si := &windows.StartupInfoEx{ProcThreadAttributeList: attrs.List()}
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = stdio[0], stdio[1], stdio[2]
	app, err := windows.UTF16PtrFromString(cmd.Path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, cmd.Path, err)
	}
	// shells, not windows.ComposeCommandLine: cmd.exe takes what follows /c
	// verbatim, and only shells knows that rule.
	line, err := windows.UTF16PtrFromString(shells.WindowsCommandLine(cmd.Argv))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, cmd.Argv[0], err)
	}
	var dir *uint16
	if cmd.Dir != "" {
		if dir, err = windows.UTF16PtrFromString(cmd.Dir); err != nil {
			return fmt.Errorf("%w: dir %s: %w", ErrStart, cmd.Dir, err)
		}
	}
	env, err := envBlock(cmd.Env)
	if err != nil {
		return fmt.Errorf("%w: env: %w", ErrStart, err)
	}
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	var pi windows.ProcessInformation
	if tok == 0 {
		err = windows.CreateProcess(app, line, nil, nil, true, flags, &env[0], dir, &si.StartupInfo, &pi)
	} else {
		err = windows.CreateProcessAsUser(tok, app, line, nil, nil, true, flags, &env[0], dir, &si.StartupInfo, &pi)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, cmd.Argv[0], err)
	}
	defer windows.CloseHandle(pi.Thread)
	if err := windows.AssignProcessToJobObject(p.job, pi.Process); err != nil {
		windows.TerminateProcess(pi.Process, KillExitCode)
		windows.CloseHandle(pi.Process)
		return fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	p.process, p.Pid = pi.Process, int(pi.ProcessId)
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		return fmt.Errorf("ResumeThread: %w", err)
	}
	return nil
}

// inheritableStdio duplicates the command's stdio as inheritable handles;
// a missing one is NUL.
func inheritableStdio(cmd enforce.Command) ([3]windows.Handle, func(), error) {
	var out [3]windows.Handle
	var opened []*os.File
	closeAll := func() {
		for _, h := range out {
			if h != 0 {
				windows.CloseHandle(h)
			}
		}
		for _, f := range opened {
			f.Close()
		}
	}
	self := windows.CurrentProcess()
	for i, f := range []*os.File{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f == nil {
			nul, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				closeAll()
				return out, nil, fmt.Errorf("open %s: %w", os.DevNull, err)
			}
			opened, f = append(opened, nul), nul
		}
		if err := windows.DuplicateHandle(self, windows.Handle(f.Fd()), self, &out[i], 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
			closeAll()
			return out, nil, fmt.Errorf("DuplicateHandle stdio %d: %w", i, err)
		}
	}
	return out, closeAll, nil
}

// Wait waits for the first process and returns its exit code.
func (p *Process) Wait() (uint32, error) {
	if _, err := windows.WaitForSingleObject(p.process, windows.INFINITE); err != nil {
		return 0, fmt.Errorf("WaitForSingleObject: %w", err)
	}
	var code uint32
	if err := windows.GetExitCodeProcess(p.process, &code); err != nil {
		return 0, fmt.Errorf("GetExitCodeProcess: %w", err)
	}
	return code, nil
}

// Kill ends every process of the call's job with KillExitCode.
func (p *Process) Kill() error {
	if err := windows.TerminateJobObject(p.job, KillExitCode); err != nil {
		return fmt.Errorf("TerminateJobObject: %w", err)
	}
	return nil
}

// Interrupt sends Ctrl-Break to the command's process group. Ctrl-C cannot
// be sent to a new process group (Windows disables it there), so the
// command sees Ctrl-Break for either.
func (p *Process) Interrupt() error {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(p.Pid)); err != nil {
		return fmt.Errorf("GenerateConsoleCtrlEvent: %w", err)
	}
	return nil
}

// Close kills what is left of the job, closes its handles and revokes the
// call's ACEs.
func (p *Process) Close() error {
	var errs []error
	if p.job != 0 {
		windows.TerminateJobObject(p.job, KillExitCode)
		errs = append(errs, windows.CloseHandle(p.job))
		p.job = 0
	}
	if p.process != 0 {
		windows.CloseHandle(p.process)
		p.process = 0
	}
	if p.grants != nil {
		errs = append(errs, p.grants.revoke())
		p.grants = nil
	}
	return errors.Join(errs...)
}

// ExecFailureStatus maps a start error to the shell convention: 127 when the
// command was not found, 126 when it was found but could not be started.
func ExecFailureStatus(err error) int {
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return 127
	}
	return 126
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h), which
// x/sys/windows does not define. Times are in 100 ns units.
type basicAccounting struct {
	TotalUserTime, TotalKernelTime                       int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime   int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses uint32
	TotalTerminatedProcesses                             uint32
}

// Resources reads what the job's processes used: the tree's peak committed
// memory and its CPU time. Call it before Close.
func (p *Process) Resources(l report.Limits) report.Resources {
	r := report.Resources{Mechanism: "none", Limits: l}
	if !l.IsZero() {
		r.Mechanism = "job-object"
	}
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if windows.QueryInformationJobObject(p.job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&ext)), uint32(unsafe.Sizeof(ext)), nil) == nil {
		r.PeakMemoryBytes, r.PeakMemorySource = int64(ext.PeakJobMemoryUsed), "job-object"
	}
	var acct basicAccounting
	if windows.QueryInformationJobObject(p.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil) == nil {
		r.CPUTimeMS = (acct.TotalUserTime + acct.TotalKernelTime) / 10000
	}
	return r
}
