//go:build !unix

package main

import "io"

// pollableStdio: only unix has a poller for pipes (see serve_stdio_unix.go).
func pollableStdio(in io.Reader, out io.Writer, _ io.Writer) (io.Reader, io.Writer, func()) {
	return in, out, func() {}
}
