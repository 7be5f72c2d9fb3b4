//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// placeholders are the carve-out placeholders this process made and the
// calls holding each. Calls of one process (sbx serve runs many at once,
// in one cwd) share a placeholder: the last to end removes it. Without the
// count, a call whose plan took another call's placeholder for an existing
// carve-out failed to bind it once that call had removed it ("bind mount
// .git: no such file or directory").
//
// IMPORTANT: the count is per process. Two sbx processes in one cwd
// without its carve-out still race: one's placeholder can be taken by the
// other's plan for an existing directory, then removed under it (the
// other call then fails; it does not run unprotected).
var placeholders = struct {
	sync.Mutex
	held map[string]int
}{held: map[string]int{}}

// existingCarveOuts returns the carve-outs of paths that exist and are not
// a placeholder a call of this process holds. The check and the stat are
// made under the lock a placeholder is removed under: checked apart, a
// placeholder could be seen to exist, then removed by its last holder,
// then seen as not held, and the plan would bind a directory that is gone.
func existingCarveOuts(paths []string) []string {
	placeholders.Lock()
	defer placeholders.Unlock()
	var out []string
	for _, p := range paths {
		if placeholders.held[p] > 0 {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// makePlaceholders creates each missing carve-out as an empty directory
// (see Plan.Placeholders), in sbx's own mount namespace, so that the
// call's can bind it read-only, or joins this process's placeholder
// already there. It returns those it holds (each to removePlaceholders):
// one that exists by now and is not this process's (the user's git init,
// another process's placeholder) is left to its maker and bound as it is.
func makePlaceholders(paths []string) ([]string, error) {
	placeholders.Lock()
	defer placeholders.Unlock()
	var made []string
	for _, path := range paths {
		if placeholders.held[path] > 0 {
			placeholders.held[path]++
			made = append(made, path)
			continue
		}
		err := os.Mkdir(path, 0o755)
		if errors.Is(err, os.ErrExist) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
			// Made by someone else by now; or its parent is not the
			// caller's to write, so the command cannot make it either.
			continue
		}
		if err != nil {
			releaseLocked(made)
			return nil, fmt.Errorf("carve-out placeholder: %w", err)
		}
		placeholders.held[path] = 1
		made = append(made, path)
	}
	return made, nil
}

// placeholderJob is makePlaceholders run beside a thread launch, which
// needs the placeholders only when it comes to bind them: the launcher
// thread makes the read-only root and binds the carve-outs meanwhile. (The
// two mkdirs took ~0.25 ms of a call through sbx serve, on the call's
// path.)
type placeholderJob struct {
	done chan struct{}
	made []string
	err  error
}

// startPlaceholders starts making paths' placeholders (see
// makePlaceholders).
func startPlaceholders(paths []string) *placeholderJob {
	j := &placeholderJob{done: make(chan struct{})}
	if len(paths) == 0 {
		close(j.done)
		return j
	}
	go func() {
		j.made, j.err = makePlaceholders(paths)
		close(j.done)
	}()
	return j
}

// wait returns makePlaceholders' result once it is made.
func (j *placeholderJob) wait() ([]string, error) {
	<-j.done
	return j.made, j.err
}

// removePlaceholders lets go of the placeholders a call held; the last
// holder removes each, only if it is still an empty directory: rmdir
// refuses anything else.
func removePlaceholders(made []string) {
	placeholders.Lock()
	defer placeholders.Unlock()
	releaseLocked(made)
}

func releaseLocked(made []string) {
	for _, path := range made {
		if placeholders.held[path]--; placeholders.held[path] > 0 {
			continue
		}
		delete(placeholders.held, path)
		unix.Rmdir(path)
	}
}
