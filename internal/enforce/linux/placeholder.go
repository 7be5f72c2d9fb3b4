//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
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

// compileCarveOuts mounts the existing carve-outs and masks read-only (a
// carve-out that is missing is watched where a mount namespace can be had,
// or gets a placeholder there when wall; else a downgrade) and returns the
// masked paths as the policy has them, before compileNamespaces may drop
// the mounts.
func (p *Plan) compileCarveOuts(needNS, wall bool) (masked []string) {
	pol := p.Policy
	// A carve-out that exists only as another call's placeholder is
	// missing: that call removes it when it ends (existingCarveOuts).
	p.ReadOnlyMounts = existingCarveOuts(pol.CarveOuts)
	p.MaskedMounts = existing(pol.Masked)
	masked = p.MaskedMounts
	var missing []string
	for _, ro := range pol.CarveOuts {
		if slices.Contains(p.ReadOnlyMounts, ro) {
			continue
		}
		// Landlock cannot subtract a subpath from a granted tree, and a bind
		// mount needs the path to exist, so a carve-out that does not exist
		// yet (a missing .git) gets an empty placeholder directory to
		// bind read-only, where a mount namespace can be had, its parent
		// exists and the kernel's wall is wanted. Otherwise it stays
		// missing, as it is bare: the command's tree is dead when Wait
		// checks it (a PID namespace), so what appeared can be removed
		// without a race.
		if needNS && isDir(filepath.Dir(ro)) {
			if wall {
				p.Placeholders = append(p.Placeholders, ro)
			} else {
				p.Watched = append(p.Watched, ro)
			}
			continue
		}
		missing = append(missing, ro)
	}
	if len(p.Watched) > 0 {
		// IMPORTANT: during the call only the supervisor refuses creating
		// a watched carve-out, from a path read in the command's memory,
		// which a racing thread can change after the check; what it so
		// creates lives until the call ends (the command can use it, and
		// so can a concurrent call in the same root), then is removed.
		// --require carve-out-create takes the placeholder instead.
		what, them := missingWhat(p.Watched)
		p.addSupervised(report.Downgrade{Feature: report.FeatureCarveOutCreate,
			Reason: what + "; the seccomp supervisor refuses creating " + them + ", best effort: a racing thread can change the path after the check; whatever appears is removed after the call, and reported"},
			report.Downgrade{Feature: report.FeatureCarveOutCreate,
				Reason: what + "; creating " + them + " is not prevented during the call; whatever appears is removed after the call, and reported"})
	}
	// IMPORTANT: without a mount namespace a missing carve-out is protected
	// against creation only by the supervisor, which checks a path read
	// from the command's memory: a racing thread can change it after the
	// check. That is best effort, so the downgrade stays and --require
	// carve-out-create still refuses to run. One downgrade names them all
	// (.git, .codex and .agents are usually missing together).
	if len(missing) > 0 {
		what, them := missingWhat(missing)
		plain := report.Downgrade{Feature: report.FeatureCarveOutCreate, Reason: what + "; creating " + them + " is not prevented"}
		if p.Supervise != SuperviseOff {
			p.addSupervised(report.Downgrade{Feature: report.FeatureCarveOutCreate,
				Reason: what + "; the seccomp supervisor refuses creating " + them + ", best effort: a racing thread can change the path after the check"}, plain)
		} else {
			p.Downgrades = append(p.Downgrades, plain)
		}
	}
	return masked
}

// missingWhat says that paths do not exist, and how to call them after.
func missingWhat(paths []string) (what, them string) {
	if len(paths) > 1 {
		return strings.Join(paths, ", ") + " do not exist", "them"
	}
	return paths[0] + " does not exist", "it"
}
