package call

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// ControlPaths are the paths of an sbx server that no call it launches
// may change: the kernel keeps them so (mounts), not the supervisor.
// They join the guard's paths, so they are applied last and nothing
// granted or approved widens past them; a danger-full-access call, which
// has no sandbox, keeps none of them (unless the guard restricts it).
type ControlPaths struct {
	// Masked can be neither read nor written (an empty read-only tmpfs
	// over a directory): the server's state directory, whose logs hold
	// every session's commands and grants, which a restarted server
	// replays, and the panel's token.
	Masked []string
	// ReadOnly can be read, not changed: the directory of the server's
	// socket (a command that unlinked the socket and bound its own would
	// answer the server's next clients), the approver's program, the
	// session's guard file.
	ReadOnly []string
	// Names say what each path is, for the report ("sbx serve's state
	// directory").
	Names map[string]string
}

// With returns c with path added, read-only (or masked when masked), and
// named name; c is not changed.
func (c ControlPaths) With(path, name string, masked bool) ControlPaths {
	out := ControlPaths{Masked: slices.Clone(c.Masked), ReadOnly: slices.Clone(c.ReadOnly), Names: maps.Clone(c.Names)}
	if masked {
		out.Masked = append(out.Masked, path)
	} else {
		out.ReadOnly = append(out.ReadOnly, path)
	}
	if out.Names == nil {
		out.Names = map[string]string{}
	}
	out.Names[path] = name
	return out
}

// withControl adds the server's control paths (Escalation.Control) to
// guard for a call of final's policy: masked ones to deny_read, read-only
// ones to deny_write. A danger-full-access call that the guard leaves
// unrestricted has no sandbox to keep them out of, and is left so: the
// server's user's processes can change its files anyway, and a mount
// namespace would make it something other than full access.
func withControl(guard escalate.Guard, final policy.Policy, c ControlPaths) escalate.Guard {
	if final.Unrestricted && guard.IsEmpty() || len(c.Masked) == 0 && len(c.ReadOnly) == 0 {
		return guard
	}
	return guard.WithPaths(c.Masked, c.ReadOnly)
}

// controlCwd refuses a cwd inside a path the server's control paths
// mask (guard has them, deployed is the guard without them): the command
// would start in an empty read-only directory, not the one asked for.
func controlCwd(cwd string, guard, deployed escalate.Guard) error {
	for _, m := range guard.DenyRead {
		if !slices.Contains(deployed.DenyRead, m) && fspath.Within(cwd, m) {
			return &strictjson.FieldError{Field: "cwd", Err: fmt.Errorf("%s is inside %s, sbx serve's state directory, which every call of the server has masked (control plane)", cwd, m)}
		}
	}
	return nil
}

// controlReasons says, in the report, that a path was taken away as the
// server's own, not by the deployment guard, where the guard did not name
// it itself.
func controlReasons(removed []escalate.Removal, guard escalate.Guard, c ControlPaths) {
	for i, r := range removed {
		if slices.Contains(guard.DenyRead, r.Path) || slices.Contains(guard.DenyWrite, r.Path) {
			continue
		}
		how := map[string]string{"read": "masked", "carve_out": "read-only"}[r.What]
		if how == "" {
			how = "taken away"
		}
		if slices.Contains(c.Masked, r.Path) || slices.Contains(c.ReadOnly, r.Path) {
			name := c.Names[r.Path]
			if name == "" {
				name = "sbx serve's own"
			}
			removed[i].Reason = r.What + ": " + name + " (control plane): " + how
		}
	}
}

// controlMasks are the paths of masked that are the server's control
// paths alone (not also the deployment guard's deny_read): their reads go
// unreported (policy.Policy.Unreported). A read there is never a
// permission to ask for, and the report already says the path is masked
// as the server's own (controlReasons).
func controlMasks(masked []string, deployed escalate.Guard, c ControlPaths) []string {
	var out []string
	for _, m := range masked {
		if slices.Contains(c.Masked, m) && !slices.Contains(deployed.DenyRead, m) {
			out = append(out, m)
		}
	}
	return out
}
