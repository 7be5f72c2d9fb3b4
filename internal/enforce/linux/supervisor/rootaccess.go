//go:build linux

package supervisor

import (
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// The supervisor's half of root access (enforce/linux's rootaccess.go
// probes the credentials and reports the roots the command cannot write):
// a write the policy allows but the command's credentials do not is
// reported as a denial whose retry is the capability that would let it
// through.

// Creds are the command's credentials for file permission checks: its uid
// (fsuid) and groups. The command holds no capability (but those
// Plan.Capabilities keeps), so only the mode bits decide.
type Creds struct {
	UID  uint32
	GIDs []uint32
}

// Permitted reports whether c may access st with the rights of want
// (a mix of unix.W_OK, unix.X_OK, unix.R_OK) by its mode bits: the owner's
// bits for the owner, the group's for a member, the others' else, as the
// kernel's generic_permission does without capabilities.
func (c Creds) Permitted(st *unix.Stat_t, want uint32) bool {
	bits := st.Mode & 0o7
	switch {
	case st.Uid == c.UID:
		bits = st.Mode >> 6 & 0o7
	case slices.Contains(c.GIDs, st.Gid):
		bits = st.Mode >> 3 & 0o7
	}
	return bits&want == want
}

func (c Creds) String() string { return fmt.Sprintf("uid %d, gids %v", c.UID, c.GIDs) }

// DacReason is enforce/linux's Plan.dacReason for credentials cr; canKeep says whether a
// capability could be granted (compileCapabilities would refuse cap_add
// otherwise).
func DacReason(cr Creds, canKeep bool, path string, st *unix.Stat_t, cap int, what string) string {
	need := report.CapabilityReason(capName(cap))
	if !canKeep {
		need = report.NoCapabilityReason
	}
	return fmt.Sprintf("%s (owner uid %d, gid %d, mode %04o): the command (%s, no capability) %s; %s", path, st.Uid, st.Gid, st.Mode&0o7777, cr, what, need)
}

func capName(cap int) string {
	switch cap {
	case unix.CAP_DAC_OVERRIDE:
		return "CAP_DAC_OVERRIDE"
	case unix.CAP_FOWNER:
		return "CAP_FOWNER"
	}
	return fmt.Sprintf("capability %d", cap)
}

// dacDenied is the inferred denial of a write the policy allows but the
// command's credentials do not: op on path, which needs want on the object
// at check (the path itself, or the directory a name is made in or removed
// from); for a chmod, ownership (CAP_FOWNER). The call continues: the
// kernel refuses it by itself, and a race can only make the report wrong,
// never let anything through. ok is false when the check passes or cannot
// be made. known, when not nil, is the stat of check that resolving it
// already made (the common allowed write then costs no second stat).
func (s *Supervisor) dacDenied(c call, op, path, check string, want uint32, known *unix.Stat_t) (decision, bool) {
	cr := s.in.Creds
	if cr == nil {
		return cont, false
	}
	var st unix.Stat_t
	if known != nil {
		st = *known
	} else if unix.Stat(check, &st) != nil {
		return cont, false
	}
	cap, what := unix.CAP_DAC_OVERRIDE, "cannot write it: the kernel refuses the call (EACCES)"
	switch {
	case op == "chmod":
		if st.Uid == cr.UID || s.in.keeps(unix.CAP_FOWNER) {
			return cont, false
		}
		cap, what = unix.CAP_FOWNER, "does not own it: the kernel refuses the chmod (EPERM)"
	case cr.Permitted(&st, want):
		return cont, false
	case check != path:
		what = "cannot write this directory: the kernel refuses the call (EACCES)"
	}
	return decision{denials: []report.Denial{{Operation: op, Path: path, Syscall: c.name, PID: c.tid,
		Source: SupervisorSource, Confidence: Inferred, Count: 1, Reason: DacReason(*cr, s.in.CredsCanKeep, check, &st, cap, what)}}}, true
}

// entryDAC is dacDenied for a call the policy lets make or remove the name
// r: its directory must be writable and searchable. A call that fails by
// itself for another reason (EEXIST, ENOENT) is not reported.
func (s *Supervisor) entryDAC(c call, op string, a denial.Access, r resolved) decision {
	switch a {
	case denial.Create, denial.MakeDevice:
		if r.exists {
			return cont
		}
	case denial.Remove, denial.RenameFrom:
		if !r.exists {
			return cont
		}
	default:
		return cont
	}
	if !s.check.Path(a, r.path).Allowed {
		return cont
	}
	d, _ := s.dacDenied(c, op, r.path, filepath.Dir(r.path), unix.W_OK|unix.X_OK, nil)
	return d
}
