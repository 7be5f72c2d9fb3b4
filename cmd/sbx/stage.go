package main

import (
	"runtime"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

func init() {
	// The launcher restricts a dedicated thread and the stage restricts its
	// main thread: keep the main goroutine on the main thread so neither
	// case can be scheduled onto the other's thread.
	runtime.LockOSThread()
	register(host.StageCommand, command{hidden: true, summary: "internal: sandbox stage", run: func([]string, Stdio) int { return host.StageMain() }})
}
