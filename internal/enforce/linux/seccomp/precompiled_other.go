//go:build linux && !amd64

package seccomp

import "golang.org/x/sys/unix"

// precompiledPrograms: none on this architecture (see precompiled.go).
var precompiledPrograms [precompiledKinds][precompiledKinds][2][]unix.SockFilter
