//go:build linux

package supervisor

import (
	"slices"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy"
)

// Input is everything the supervisor reads of a call's plan, and nothing
// else: it decides from these alone, so what it may know is written in one
// place. enforce/linux's Plan.supervisorInput fills it; the plan's field
// comments say what each means.
type Input struct {
	Policy  policy.Policy        // what denial.Checker decides from; WriteRoots, DenyGlobs
	Devices []string             // device files the command may write
	Sockets seccomp.SocketPolicy // which network-off rules apply (notify_net.go)
	// NewUserNS: the call has a user namespace of its own (hostlisten.go).
	NewUserNS bool
	// LandlockUnix: Landlock itself confines pathname unix sockets
	// (ABI 9); AbstractScoped: only Landlock's scope confines abstract
	// ones (no private network namespace). See unixconnect.go.
	LandlockUnix, AbstractScoped bool

	Placeholders   []string // carve-outs a placeholder stands in for
	ReadOnlyMounts []string // carve-outs mounted read-only
	MaskedMounts   []string // paths the guard hides under a mount
	// MaskedLinks are the other names of masked files; MaskedInodes
	// indexes them by inode (maskinode.go).
	MaskedLinks  []MaskedLink
	MaskedInodes map[DevIno]int

	// Capabilities the command keeps: performed operations run with these
	// (performed.go), and a DAC refusal is not one with them
	// (rootaccess.go).
	Capabilities []int
	// Creds are the command's credentials, nil when unknown; CredsCanKeep
	// says whether a capability could be granted for a retry.
	Creds        *Creds
	CredsCanKeep bool
}

// keeps reports whether the command keeps capability cap.
func (in *Input) keeps(cap int) bool { return slices.Contains(in.Capabilities, cap) }
