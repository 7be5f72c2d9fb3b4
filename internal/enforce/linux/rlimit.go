//go:build linux

package linux

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Rlimit is a resource limit the stage sets before it execs the command.
type Rlimit struct {
	Resource int
	Name     string
	Value    uint64
}

// limitedExecArg makes the stage a limit shim: `sbx __stage limits RLIMITS
// PATH ARGV...` sets the rlimits and execs PATH.
const limitedExecArg = "limits"

// limitedArgv is what the stage, as PID 1, forks for the command. With rlimit
// fallbacks it forks the limit shim instead: the stage itself must stay
// outside them (a Go runtime starts threads and maps memory whenever it
// needs to, and RLIMIT_NPROC counts threads), and Go cannot run code between
// its fork and exec.
func limitedArgv(pl stagePayload) (string, []string, error) {
	if len(pl.Plan.Rlimits) == 0 {
		return pl.Path, pl.Argv, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("locate sbx for the limit shim: %w", err)
	}
	var spec []string
	for _, rl := range pl.Plan.Rlimits {
		v := rl.Value
		if rl.Resource == unix.RLIMIT_NPROC {
			// RLIMIT_NPROC counts every task of the user in the call's user
			// namespace: the stage's own threads too.
			v += uint64(ownThreads())
		}
		spec = append(spec, fmt.Sprintf("%d=%d", rl.Resource, v))
	}
	return exe, append([]string{pl.Argv[0], StageCommand, limitedExecArg, strings.Join(spec, ","), pl.Path}, pl.Argv...), nil
}

// limitedExec is the limit shim: it sets the rlimits as the last thing
// before exec, so the runtime has no time to need a thread they forbid.
func limitedExec(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "sbx stage: limit shim: missing arguments")
		return 125
	}
	var rls []Rlimit
	for _, kv := range strings.Split(args[0], ",") {
		var rl Rlimit
		if _, err := fmt.Sscanf(kv, "%d=%d", &rl.Resource, &rl.Value); err != nil {
			fmt.Fprintf(os.Stderr, "sbx stage: limit shim: bad limit %q\n", kv)
			return 125
		}
		rls = append(rls, rl)
	}
	path, argv := args[1], args[2:]
	if err := setRlimits(rls); err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	err := unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", argv[0], err)
	return ExecFailureStatus(err)
}

func ownThreads() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// setRlimits applies the plan's rlimit fallbacks to the calling process.
func setRlimits(rls []Rlimit) error {
	for _, rl := range rls {
		if err := unix.Setrlimit(rl.Resource, &unix.Rlimit{Cur: rl.Value, Max: rl.Value}); err != nil {
			return fmt.Errorf("setrlimit(%d, %d): %w", rl.Resource, rl.Value, err)
		}
	}
	return nil
}
