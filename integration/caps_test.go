//go:build linux

package integration

import (
	"slices"
	"testing"
)

// sandboxCaps is what sbx can enforce for this kernel, this user and this
// configuration. Tests derive the outcome they assert from it, so that on
// every kernel of the VM matrix (and on the host) they check the outcome that
// kernel must give: enforced where the feature exists, the degradation
// reported where it does not.
type sandboxCaps struct {
	// abi is the kernel's Landlock ABI, 0 without Landlock.
	abi int
	// namespaces: sbx creates its namespaces (PID, network, mount): as root
	// directly, otherwise inside an unprivileged user namespace. Without
	// them (no user namespaces, not root) it falls back to seccomp and
	// Landlock alone and reports pidns, netns, mountns and mask.
	namespaces bool
	// supervised: the seccomp supervisor runs (user notification), refusing
	// what the policy forbids and reporting it as a denial.
	supervised bool
	// privateProc: with its namespaces, the command gets a procfs of its
	// own PID namespace. Inside a user namespace the kernel refuses one
	// while a container runtime hides parts of /proc under other mounts;
	// sbx then reports procfs.
	privateProc bool
}

// caps fails the test (through expect) when the kernel is new enough for a
// feature that is missing without an explanation.
func caps(t *testing.T) sandboxCaps {
	t.Helper()
	c := sandboxCaps{namespaces: expect(t, "netns"), supervised: expect(t, "user-notif")}
	c.privateProc = c.namespaces && expect(t, "private-procfs")
	for _, f := range []string{"landlock", "landlock-refer", "landlock-truncate", "landlock-net", "landlock-scope", "landlock-resolve-unix"} {
		if !expect(t, f) {
			break
		}
	}
	if abi, err := landlockABI(); err == nil {
		c.abi = abi
	}
	return c
}

// callShape is the part of a call that decides which features it needs.
type callShape struct {
	mode string // "read-only", "workspace-write" or "danger-full-access"
	// network on (--network).
	network bool
	// git: the cwd has every protected name (.git, .codex, .agents), the
	// carve-outs, existing (workspace-write only); without them,
	// workspace-write cannot stop their creation for sure.
	git bool
	// masked: the guard forbids reading an existing path.
	masked bool
}

// degraded is the exact list of features sbx must report as degraded for a
// call of shape s (enforce/linux/plan.go), sorted.
func (c sandboxCaps) degraded(s callShape) []string {
	if s.mode == "danger-full-access" {
		return nil
	}
	var d []string
	if !c.supervised {
		d = append(d, "denial-reports")
	}
	if c.namespaces && !c.privateProc {
		d = append(d, "procfs")
	}
	if c.namespaces && c.supervised && s.mode == "workspace-write" && !s.git {
		// A missing .git is left missing, as it is bare (a placeholder
		// made Go's -buildvcs=auto run git, which failed): the supervisor
		// refuses creating it, best effort, and the post-call check
		// removes what appeared. --require carve-out-create takes the
		// placeholder instead (unenforced).
		d = append(d, "carve-out-create")
	}
	if !c.namespaces {
		// Without a mount namespace: no placeholder protects a missing
		// .git, no read-only mounts refuse chmod, chown, utimes and xattrs
		// (Landlock has no right for them), and /proc is the host's.
		if s.mode == "workspace-write" && !s.git {
			d = append(d, "carve-out-create")
		}
		d = append(d, "file-attributes", "procfs")
		d = append(d, "pidns")
		if s.mode == "workspace-write" && s.git {
			d = append(d, "mountns")
		}
		if s.masked {
			d = append(d, "mask")
		}
		if !s.network {
			d = append(d, "netns")
		}
	}
	switch {
	case c.abi == 0:
		// Without Landlock its parts are listed too, so --require of any
		// of them refuses.
		d = append(d, "landlock", "landlock-refer", "landlock-truncate", "landlock-scope")
		if !s.network && !c.supervised {
			// The supervisor carries out every connect, addressed
			// datagram, sendmsg and sendmmsg (unixconnect.go,
			// sendmsg.go): only without it is this degraded.
			d = append(d, "landlock-resolve-unix")
		}
	default:
		if c.abi < 2 {
			d = append(d, "landlock-refer")
		}
		if c.abi < 3 {
			d = append(d, "landlock-truncate")
		}
		if c.abi < 6 {
			d = append(d, "landlock-scope")
		}
		if c.abi < 9 && !s.network && (!c.supervised || !c.namespaces && c.abi >= 6) {
			// With the network on, unix sockets are meant to be
			// reachable; with the network off the supervisor closes the
			// gap below ABI 9, except without a network namespace,
			// where abstract addresses continue (Landlock's scope).
			d = append(d, "landlock-resolve-unix")
		}
	}
	slices.Sort(d)
	return d
}

// unenforced is every feature --require must refuse for a call of shape s:
// the degraded ones.
// With namespaces, carve-out-create is the exception: degraded by
// default, where the supervisor watches the missing carve-outs, and
// enforced by a placeholder when the call requires it.
func (c sandboxCaps) unenforced(s callShape) []string {
	d := c.degraded(s)
	if c.namespaces {
		d = slices.DeleteFunc(d, func(f string) bool { return f == "carve-out-create" })
	}
	return d
}

// landlockFeatures are the optional access rights the report must list as
// used (enforcement.landlock.features) at this ABI, for a call with the
// network on or off.
func (c sandboxCaps) landlockFeatures(network bool) []string {
	var f []string
	if c.abi >= 2 {
		f = append(f, "refer")
	}
	if c.abi >= 3 {
		f = append(f, "truncate")
	}
	if c.abi >= 5 {
		f = append(f, "ioctl_dev")
	}
	if c.abi >= 9 && !network {
		f = append(f, "resolve_unix")
	}
	return f
}

// landlockScopes are the scopes the report must list for a sandboxed call
// (enforcement.landlock.scopes): the signal scope from ABI 6, and with the
// network off the abstract unix socket scope too.
func (c sandboxCaps) landlockScopes(network bool) []string {
	if c.abi < 6 {
		return nil
	}
	if network {
		return []string{"signal"}
	}
	return []string{"abstract_unix_socket", "signal"}
}

// landlockNetTCP: with the network off and no private network namespace,
// Landlock ABI 4 also denies every TCP bind and connect.
func (c sandboxCaps) landlockNetTCP(network bool) bool {
	return c.abi >= 4 && !network && !c.namespaces
}

// wantDegraded asserts that the report's degraded list is exactly want (in
// any order), each entry with a reason.
func wantDegraded(t *testing.T, rep *report, want []string) {
	t.Helper()
	got := rep.degradedFeatures()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("degraded features %q, want %q\n%+v", got, want, rep.Degraded)
	}
	for _, d := range rep.Degraded {
		if d.Reason == "" {
			t.Errorf("degraded %s has no reason", d.Feature)
		}
	}
}
