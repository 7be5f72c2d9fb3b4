package denial

import (
	"net/netip"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
)

// Access is what an operation needs from the policy, in the terms Landlock
// checks it.
type Access int

const (
	// WriteObject writes an existing object: open for writing, truncate, an
	// O_TMPFILE in a directory. Needs the object inside a write root, or a
	// writable device.
	WriteObject Access = iota
	// Create makes a new name (mkdir, mknod of a file, fifo or socket,
	// symlink, link, open O_CREAT). Needs its parent inside a write root.
	Create
	// Remove removes a name (unlink, rmdir). Needs its parent inside a write
	// root.
	Remove
	// RenameFrom is the name a rename takes away; RenameTo the name it makes.
	// Both need their parent inside a write root. RenameTo also may not be an
	// ancestor of a carve-out: the moved tree could bring the carve-out's
	// path into being.
	RenameFrom
	RenameTo
	// LinkSource is the existing name a hard link is made from. Landlock
	// needs the right to reparent it (REFER) in its directory, so the parent
	// must be inside a write root too.
	LinkSource
	// Metadata changes a mode or an owner. Needs the object inside a write
	// root, or a writable device.
	Metadata
	// MakeDevice creates a character or block device node, which no
	// sandboxed mode allows (Landlock's MAKE_CHAR and MAKE_BLOCK are never
	// granted).
	MakeDevice
	// Read opens an object for reading. Every path may be read except
	// those the guard hides.
	Read
)

// Cause says why the policy forbids an operation.
type Cause int

const (
	// NoCause: the policy allows it.
	NoCause Cause = iota
	// OutsideWriteRoots: the object or its parent is not inside a write root.
	OutsideWriteRoots
	// CarveOut: inside a read-only carve-out (Verdict.At), or a rename onto
	// an ancestor of one.
	CarveOut
	// Masked: inside a path the guard forbids reading (and so writing).
	Masked
	// DeviceNode: creating a device node.
	DeviceNode
	// DenyGlob: the path (or a directory above it) matches a deny
	// pattern (Verdict.At is the pattern as given).
	DenyGlob
)

var causeText = map[Cause]string{
	NoCause:           "allowed",
	OutsideWriteRoots: "outside the writable roots",
	CarveOut:          "inside a read-only carve-out",
	Masked:            "inside a path the guard hides",
	DeviceNode:        "device nodes cannot be created in the sandbox",
	DenyGlob:          "matches a deny pattern",
}

func (c Cause) String() string { return causeText[c] }

// Verdict is the answer for one path.
type Verdict struct {
	Allowed bool
	Cause   Cause
	// At is the carve-out or masked path at fault, when there is one.
	At string
}

// Reason is a short human text for the report: "outside the writable roots",
// "inside the read-only carve-out /w/.git".
func (v Verdict) Reason() string {
	switch v.Cause {
	case CarveOut:
		return "inside the read-only carve-out " + v.At
	case Masked:
		return "inside " + v.At + ", which the guard hides"
	case DenyGlob:
		return v.At
	}
	return v.Cause.String()
}

// Extra is what the checker needs beyond the policy.
type Extra struct {
	// Devices are more writable device files (the terminal behind the
	// standard streams), resolved.
	Devices []string
}

// Checker answers for one policy. Its paths must be absolute, clean and
// resolved (no symlinks), the way the kernel sees the object.
type Checker struct {
	writeRoots []string
	readOnly   []string
	masked     []string
	devices    []string
	globs      policy.DenyMatcher
}

// NewChecker returns the checker for pol. Policy paths are already
// resolved (policy.Build and the guard resolve them).
func NewChecker(pol policy.Policy, extra Extra) *Checker {
	c := &Checker{
		writeRoots: slices.Clone(pol.WriteRoots),
		readOnly:   slices.Clone(pol.CarveOuts),
		masked:     slices.Clone(pol.Masked),
		globs:      policy.NewDenyMatcher(slices.Clone(pol.DenyGlobs)),
	}
	for _, d := range append(slices.Clone(pol.Devices), extra.Devices...) {
		if !slices.Contains(c.devices, d) {
			c.devices = append(c.devices, d)
		}
	}
	if pol.Unrestricted {
		c.writeRoots, c.readOnly = []string{"/"}, nil
	}
	return c
}

// Path says whether the policy allows access a on path.
func (c *Checker) Path(a Access, path string) Verdict {
	if m := covering(path, c.masked); m != "" {
		return Verdict{Cause: Masked, At: m}
	}
	if a == Read {
		// A deny_read match the mounts do not hide (made during the call,
		// or past the walk's bound).
		if d, ok := c.globs.Match(path, true); ok {
			return Verdict{Cause: DenyGlob, At: d.Reason()}
		}
		return Verdict{Allowed: true}
	}
	if ro := covering(path, c.readOnly); ro != "" {
		return Verdict{Cause: CarveOut, At: ro}
	}
	if d, ok := c.globs.Match(path, false); ok {
		return Verdict{Cause: DenyGlob, At: d.Reason()}
	}
	switch a {
	case WriteObject, Metadata:
		if fspath.CoveredBy(path, c.writeRoots) || slices.Contains(c.devices, path) {
			return Verdict{Allowed: true}
		}
		return Verdict{Cause: OutsideWriteRoots}
	case MakeDevice:
		return Verdict{Cause: DeviceNode}
	case RenameTo:
		for _, ro := range c.readOnly {
			if fspath.Within(ro, path) {
				return Verdict{Cause: CarveOut, At: ro}
			}
		}
	}
	// A name is made or removed in its parent directory. A write root that
	// is a file grants nothing there, which Within gets right: no directory
	// is within a file.
	if parent := filepath.Dir(path); parent != path && fspath.CoveredBy(parent, c.writeRoots) {
		return Verdict{Allowed: true}
	}
	return Verdict{Cause: OutsideWriteRoots}
}

// covering returns the first of bases that path is within, or "".
// DenyGlobAt returns the deny pattern that covers path, if any (with reads
// true, deny_read patterns only), whatever else the policy says of path.
func (c *Checker) DenyGlobAt(path string, reads bool) (policy.DenyGlob, bool) {
	return c.globs.Match(path, reads)
}

func covering(path string, bases []string) string {
	for _, b := range bases {
		if fspath.Within(path, b) {
			return b
		}
	}
	return ""
}

// IsolatedNetworkAllows says whether a connect to, or a bind of, addr stays
// inside an isolated network, where only loopback is reachable. A wildcard
// bind (0.0.0.0, ::) stays inside the private namespace; a connect to the
// unspecified address goes to loopback on Linux. Both are allowed.
func IsolatedNetworkAllows(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsLoopback() || addr.IsUnspecified()
}
