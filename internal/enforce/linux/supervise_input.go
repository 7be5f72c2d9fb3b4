//go:build linux

package linux

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
)

// supervisorInput is everything the supervisor reads of a plan, and
// nothing else: the supervisor decides from these alone, so what it may
// know is written in one place (the step towards a package of its own,
// issue 32 §2). supervisorInput fills it from a Plan; the plan's field
// comments say what each means.
type supervisorInput struct {
	Policy  policy.Policy // what denial.Checker decides from; WriteRoots, DenyGlobs
	Devices []string      // device files the command may write
	Sockets SocketPolicy  // which network-off rules apply (notify_net.go)
	// NewUserNS: the call has a user namespace of its own (hostlisten.go).
	NewUserNS bool
	// LandlockUnix: Landlock itself confines pathname unix sockets
	// (ABI 9); AbstractScoped: only Landlock's scope confines abstract
	// ones (no private network namespace). See unixconnect.go.
	LandlockUnix, AbstractScoped bool

	Placeholders   []string // carve-outs a placeholder stands in for
	ReadOnlyMounts []string // carve-outs mounted read-only
	MaskedMounts   []string // paths the guard hides under a mount
	// MaskedLinks are the other names of masked files; maskedInodes
	// indexes them by inode (maskinode.go).
	MaskedLinks  []MaskedLink
	maskedInodes map[devIno]int

	// Capabilities the command keeps: performed operations run with these
	// (performed.go), and a DAC refusal is not one with them
	// (rootaccess.go).
	Capabilities []int
	// Creds are the command's credentials, nil when unknown; CredsCanKeep
	// says whether a capability could be granted for a retry.
	Creds        *Creds
	CredsCanKeep bool
}

// supervisorInput is the part of p the supervisor reads.
func (p *Plan) supervisorInput() supervisorInput {
	in := supervisorInput{
		Policy:         p.Policy,
		Devices:        p.Devices,
		Sockets:        p.Sockets,
		NewUserNS:      p.NewUserNS,
		Placeholders:   p.Placeholders,
		ReadOnlyMounts: p.ReadOnlyMounts,
		MaskedMounts:   p.MaskedMounts,
		MaskedLinks:    p.MaskedLinks,
		maskedInodes:   p.maskedInodes,
		Capabilities:   p.Capabilities,
		Creds:          p.Creds,
		CredsCanKeep:   p.credsCanKeep,
	}
	if lp := p.Landlock; lp != nil {
		in.LandlockUnix = lp.HandledFS&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0
		in.AbstractScoped = !p.NewNetNS && lp.Scoped&unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET != 0
	}
	return in
}

// keeps reports whether the command keeps capability cap.
func (in *supervisorInput) keeps(cap int) bool { return slices.Contains(in.Capabilities, cap) }
