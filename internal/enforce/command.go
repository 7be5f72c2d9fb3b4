package enforce

import "os"

// Command is the command one call runs, resolved to an executable. Every
// backend starts it the same way: Argv with Env in Dir, with Stdin, Stdout
// and Stderr as fds 0-2 and nothing else inherited.
type Command struct {
	// Path is the resolved executable; Argv[0] is what the command sees.
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Stdin, Stdout and Stderr become fds 0, 1 and 2.
	Stdin, Stdout, Stderr *os.File
	// Terminal says Stdin is the slave of a fresh pseudo-terminal: it
	// becomes the controlling terminal of the command's new session, so
	// the command's process group is its foreground group.
	Terminal bool
}
