//go:build linux

package linux

import (
	"fmt"
	"strings"
)

// MountKind is one kind of step in a call's mount namespace.
type MountKind int

const (
	// MountReadOnlyRoot: every mount outside the writable roots read-only
	// (no Landlock to confine writes).
	MountReadOnlyRoot MountKind = iota
	// MountCarveOut: an existing carve-out bind-mounted read-only onto
	// itself.
	MountCarveOut
	// MountPlaceholder: an empty placeholder directory standing for a
	// missing carve-out, bind-mounted read-only (removed after the call).
	MountPlaceholder
	// MountProc: the call's own procfs on /proc, then procReadOnly
	// bind-mounted read-only over it.
	MountProc
	// MountMask: a path the guard forbids reading, hidden.
	MountMask
)

// MountOp is one step of a call's mount set-up: what the plan prints and
// what setupMounts carries out, from the same list (as bubblewrap
// walks its ordered setup ops).
type MountOp struct {
	Kind MountKind
	// Path is the path the step acts on; for MountReadOnlyRoot, Roots are
	// the writable roots left writable.
	Path  string
	Roots []string
}

// MountOps are s's mount steps in the order they run: the read-only root
// first (it covers whatever exists), then the carve-outs read-only, the
// procfs, the placeholders read-only, and the masks last, so that nothing
// mounted later uncovers a masked path. The placeholders come as late as
// they can: a thread launch makes them while its thread makes the mounts
// before (see startPlaceholders).
func (s *StageSpec) MountOps() []MountOp {
	var ops []MountOp
	if s.ReadOnlyRoot {
		ops = append(ops, MountOp{Kind: MountReadOnlyRoot, Roots: s.WriteRoots})
	}
	for _, path := range s.ReadOnlyMounts {
		ops = append(ops, MountOp{Kind: MountCarveOut, Path: path})
	}
	if s.PrivateProc {
		ops = append(ops, MountOp{Kind: MountProc, Path: "/proc"})
	}
	for _, path := range s.Placeholders {
		ops = append(ops, MountOp{Kind: MountPlaceholder, Path: path})
	}
	for _, path := range s.MaskedMounts {
		ops = append(ops, MountOp{Kind: MountMask, Path: path})
	}
	return ops
}

// String is the step as the plan prints it, after "mount: ".
func (op MountOp) String() string {
	switch op.Kind {
	case MountReadOnlyRoot:
		if len(op.Roots) == 0 {
			return "every mount read-only but the writable roots (none)"
		}
		return "every mount read-only but the writable roots " + strings.Join(op.Roots, ", ") + ", made nosuid"
	case MountCarveOut:
		return "ro-bind " + op.Path
	case MountPlaceholder:
		return "ro-bind " + op.Path + " (empty placeholder directory, removed after the call)"
	case MountProc:
		return "proc /proc (the call's PID namespace), ro-bind " + strings.Join(procReadOnly, " ")
	case MountMask:
		return "mask " + op.Path
	}
	return fmt.Sprintf("MountKind(%d) %s", int(op.Kind), op.Path)
}
