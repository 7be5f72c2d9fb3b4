//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
)

// ErrUserNS wraps a failure to make the stage's user namespace that the
// sysctls did not predict: a container runtime's seccomp profile, an LSM,
// or sbx running inside another sandbox (whose Landlock domain forbids
// writing the uid map). The caller may fall back to a launch without
// namespaces (see TryUserNS), reported.
var ErrUserNS = errors.New("user namespace")

// ErrStart wraps errors of the exec itself (command missing, not executable),
// as opposed to failures to set up the sandbox.
var ErrStart = errors.New("start")

// Start launches spec under p. The restrictions are applied before the
// command's first instruction: on a dedicated, locked launcher thread that
// forks the command (LaunchThread), or in a re-executed sbx stage inside new
// namespaces (LaunchStage), or not at all (LaunchDirect).
func Start(p *Plan, spec enforce.Command) (*Process, error) {
	var pre *prestarted
	var preStage *stageProc
	if p.Launch == LaunchStage {
		preStage = takePending().forStage(p, spec)
	} else if pre = takePending().forThread(p); pre == nil {
		pre = takeAhead(p)
	}
	if preStage != nil {
		// Whatever fails before it runs, it must not wait for a plan.
		defer func() {
			if preStage != nil {
				preStage.kill()
			}
		}()
	}
	if err := markInheritedCloexec(); err != nil {
		pre.end()
		return nil, err
	}
	if p.Launch == LaunchThread {
		// sbx's own environment holds what it strips from the command's;
		// where the command shares sbx's PID namespace and uid (no
		// namespaces can be made), /proc/<sbx>/environ and mem would be
		// open to it. A process that is not dumpable has its /proc files
		// owned by root and needs CAP_SYS_PTRACE to be read. (Not for a
		// stage launch: the uid map of a stage, still sbx's clone, must
		// stay writable by the caller; its command sees a PID namespace
		// of its own anyway. Nor inside the unprivileged server's user
		// namespace, where the stages of calls with limits are spawned
		// too: see serverDumpable.)
		if err := serverDumpable(p); err != nil {
			pre.end()
			return nil, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
		}
	}
	// A thread launch binds the placeholders once its thread comes to
	// them; every other launch needs them before it starts.
	phs := startPlaceholders(p.Placeholders)
	threadLaunch := preStage == nil && p.Launch == LaunchThread && !launchesOutside(p)
	if !threadLaunch {
		if _, err := phs.wait(); err != nil {
			pre.end()
			return nil, err
		}
	}
	// Opened before the command can rename a watched carve-out's
	// directory (see watch).
	watches, err := openWatches(p.Watched)
	if err != nil {
		pre.end()
		made, _ := phs.wait()
		removePlaceholders(made)
		return nil, err
	}
	// Removed once the call is over, and on every failure before that.
	ok := false
	defer func() {
		if !ok {
			made, _ := phs.wait()
			removePlaceholders(made)
			closeWatches(watches)
		}
	}()
	var sup *supervisor
	if p.Supervise != SuperviseOff && p.Launch != LaunchDirect {
		if sup, err = newSupervisor(p); err != nil {
			pre.end()
			return nil, err
		}
	}
	var cg *callCgroup
	if p.Cgroup != nil {
		if cg, err = createCgroups(p.Cgroup, p.Limits); err != nil {
			pre.end()
			if sup != nil {
				sup.release()
			}
			return nil, err
		}
	}
	steptrace.Mark("start: placeholders, supervisor, cgroup")
	var pr *Process
	switch {
	case preStage != nil:
		st := preStage
		preStage = nil
		pr, err = st.run(p, spec, sup)
	case p.Launch == LaunchStage:
		pr, err = startStage(p, spec, sup, cg)
	case launchesOutside(p):
		pr, err = startOutside(spec)
	default:
		pr, err = startThread(p, spec, sup, cg, pre, func() error {
			_, err := phs.wait()
			return err
		})
		if err == nil {
			prestartAhead(p)
		}
	}
	if err != nil {
		if sup != nil {
			sup.release()
		}
		if cg != nil {
			cg.remove()
		}
		return nil, err
	}
	// Made: the launcher thread waited for them before its mounts.
	made, _ := phs.wait()
	pr.cg, pr.plan, pr.placeholders, pr.watches = cg, p, made, watches
	ok = true
	return pr, nil
}

// restrictThread applies no_new_privs, Landlock and seccomp to the calling
// thread, in that order: seccomp last so the filter need not allow the
// Landlock syscalls. For a supervised plan it returns the filter's listener.
// It takes the StageSpec, not the Plan: the stage has nothing else, so a
// field it came to read outside the spec would not compile, rather than be
// zero in the stage alone.
func restrictThread(s *StageSpec) (supervise.Listener, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return supervise.Listener{FD: -1}, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if s.Landlock != nil {
		if err := s.Landlock.RestrictSelf(); err != nil {
			return supervise.Listener{FD: -1}, err
		}
		steptrace.Mark("landlock")
	}
	lis, err := loadFilter(s)
	steptrace.Mark("seccomp: load the filter")
	return lis, err
}

// markInheritedCloexec marks every fd above stderr close-on-exec, so fds sbx
// inherited from its caller (which Landlock does not re-check) never reach
// the command. Go opens its own fds with O_CLOEXEC already.
func markInheritedCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	// Kernels before 5.11: walk /proc/self/fd.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open fds: %w", err)
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
