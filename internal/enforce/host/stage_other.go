//go:build !linux

package host

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain has nothing to do here: on macOS sandbox-exec applies the
// profile and on Windows sbx sets up the token and the job itself; no sbx
// stage runs inside the sandbox.
func StageMain() int { return 125 }
