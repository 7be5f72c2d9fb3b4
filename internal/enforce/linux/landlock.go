//go:build linux

package linux

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/landlock"
)

// Landlock access rights, grouped the way policy uses them: each is derived
// from the table of ABI facts (internal/landlock), whose rows say which
// rules grant a right and why some are granted by none (MAKE_CHAR and
// MAKE_BLOCK: a root caller could otherwise mknod the host's disk inside a
// writable root and write to it through a path Landlock allows).
var (
	llRead = landlock.Granted(landlock.ReadRoot, landlock.Always)
	// llWrite is what a writable root grants besides llRead.
	llWrite = landlock.Granted(landlock.WriteRoot, landlock.Always)
	// llDevice is what a shell needs on /dev/null, /dev/tty and its terminal.
	llDevice = landlock.Granted(landlock.Device, landlock.Always)
	// llFileOnly are the rights Landlock accepts on a rule for a non-directory.
	llFileOnly = landlock.FileRights()
)

// handledFS returns every file-system right an ABI knows, so that anything
// not granted by a rule is denied. Rights handled only with the network off
// (RESOLVE_UNIX, ABI 9: handling it cuts the command off from every
// pathname unix socket not granted by a rule) are not here:
// restrictUnixSockets adds them.
func handledFS(abi int) uint64 { return landlock.Mask(landlock.FS, abi, landlock.Always) }

// resolveUnixABI is the first Landlock ABI with
// LANDLOCK_ACCESS_FS_RESOLVE_UNIX (include/uapi/linux/landlock.h):
// connect(2) and sendmsg(2) to a pathname unix socket need that right on
// the socket file.
var resolveUnixABI = abiOf(landlock.FeatureResolveUnix)

// abiOf is the version of the ABI row that stands for feature
// (TestCompileResolveUnix fails if the row were missing: 0 would handle the
// right on every ABI).
func abiOf(feature string) int {
	a, _ := landlock.ByFeature(feature)
	return a.Version
}

// accessString names the file-system rights in a mask, for Plan.String.
func accessString(a uint64) string { return landlock.Names(landlock.FS, a) }

// terminalPaths returns the terminal devices behind a command's standard
// streams, so that the command keeps its terminal under Landlock (a program
// may reopen it by name). Only the command's own streams count: sbx's are
// not the command's when a server runs it (its calls get pipes), and a
// server started from a terminal, its stderr left there, would otherwise
// give every call read and write on the user's terminal (keystrokes typed
// into the agent included). A stream that is no character device costs one
// fstat, and no readlink of /proc.
func terminalPaths(streams [3]*os.File) []string {
	var out []string
	for _, f := range streams {
		if f == nil {
			continue
		}
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		var p string
		rc.Control(func(fd uintptr) {
			var st unix.Stat_t
			if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
				return
			}
			p, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
		})
		if (strings.HasPrefix(p, "/dev/pts/") || strings.HasPrefix(p, "/dev/tty") || p == "/dev/console") && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
