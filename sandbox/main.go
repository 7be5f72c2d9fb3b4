package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/run"
)

// init locks the main goroutine to the main thread in the one process
// that needs it, the re-executed stage, and in no other: Go runs inits on
// the main thread, and a lock taken in an init holds through main (the
// runtime's documented way to keep main there), where Main could find the
// goroutine already moved by a preemption between the runtime's start and
// its call. In every other process importing sandbox locks nothing.
func init() {
	if isStage(os.Args) {
		runtime.LockOSThread()
	}
}

// isStage reports whether args are those sbx re-executes a program with
// to make it a call's stage.
func isStage(args []string) bool { return len(args) > 1 && args[1] == host.StageCommand }

// Main runs sbx's stages when this process is one, and exits; otherwise it
// returns at once and changes nothing. Call it first thing in main, as a
// runc-based program calls runc's init:
//
//	func main() {
//		sandbox.Main()
//		...
//	}
//
// sbx re-executes the program as the sandbox's stage (an unprivileged
// call, in a new user namespace) and as the helper that makes a
// file-system change inside the sandbox: only those processes are
// restricted, and only they lock their main goroutine to the main thread,
// here. Importing the package locks nothing: the calling program's threads
// are its own (the launcher restricts a dedicated thread of its own and
// ends it).
//
// IMPORTANT: a program that does not call Main runs its own main in the
// stage's place, in the call's new namespaces but unrestricted, and the
// call then fails: nothing here can detect that a program forgot
// (docs/security.md, "Known gaps").
func Main() {
	if len(os.Args) < 2 {
		return
	}
	switch {
	case isStage(os.Args):
		lockMainThread()
		os.Exit(host.StageMain())
	case os.Args[1] == run.FSStageCommand:
		// The helper is the command, restricted before it started: it
		// needs no particular thread, and keeps the lock the sbx binary
		// gives it.
		runtime.LockOSThread()
		os.Exit(run.FSStageMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// lockMainThread locks the main goroutine to the thread it is on (init
// has already), which the stage then restricts and execs from, and exits
// 125, nothing run, when that is not the process's main thread: Main was
// called from another goroutine than main's. The stage is written for the main thread (the thread group leader,
// which /proc/self names); a stage on another thread fails closed.
func lockMainThread() {
	runtime.LockOSThread()
	if !onMainThread() {
		fmt.Fprintln(os.Stderr, "sbx stage: sandbox.Main ran off the main thread (call it first in main)")
		os.Exit(125)
	}
}
