//go:build linux && !amd64

package seccomp

// No other architecture has a foreign ABI the filter names (nativeSeccompArch
// supports amd64 only).
const (
	x32SyscallNames  = ""
	i386SyscallNames = ""
)
