package denial

import (
	"net/netip"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

func testPolicy() policy.Policy {
	return policy.Policy{
		Mode:       profiles.WorkspaceWrite,
		ReadRoots:  []string{"/"},
		WriteRoots: []string{"/tmp", "/w", "/etc/granted.conf"},
		CarveOuts:  []string{"/w/.git", "/w/sub/.git"},
		Devices:    policy.DefaultDevices,
		Masked:     []string{"/w/secret", "/home/u/.ssh"},
	}
}

func TestCheckerPath(t *testing.T) {
	c := NewChecker(testPolicy(), Extra{Devices: []string{"/dev/pts/3"}})
	tests := []struct {
		name   string
		access Access
		path   string
		want   Verdict
	}{
		{"write in a root", WriteObject, "/w/a.txt", Verdict{Allowed: true}},
		{"write the root dir itself (O_TMPFILE)", WriteObject, "/w", Verdict{Allowed: true}},
		{"write outside", WriteObject, "/etc/passwd", Verdict{Cause: OutsideWriteRoots}},
		{"write a sibling with a common prefix", WriteObject, "/work/x", Verdict{Cause: OutsideWriteRoots}},
		{"write a granted file", WriteObject, "/etc/granted.conf", Verdict{Allowed: true}},
		{"write a device", WriteObject, "/dev/null", Verdict{Allowed: true}},
		{"write the terminal", WriteObject, "/dev/pts/3", Verdict{Allowed: true}},
		{"write another terminal", WriteObject, "/dev/pts/4", Verdict{Cause: OutsideWriteRoots}},
		{"write into .git", WriteObject, "/w/.git/config", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"write a nested .git", WriteObject, "/w/sub/.git/HEAD", Verdict{Cause: CarveOut, At: "/w/sub/.git"}},
		{"write .gitignore is not .git", WriteObject, "/w/.gitignore", Verdict{Allowed: true}},
		{"write a masked file", WriteObject, "/w/secret/key", Verdict{Cause: Masked, At: "/w/secret"}},
		{"create in a root", Create, "/w/new", Verdict{Allowed: true}},
		{"create .git when absent", Create, "/w/.git", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"create under .git", Create, "/w/.git/hooks/x", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"create outside", Create, "/etc/x", Verdict{Cause: OutsideWriteRoots}},
		{"create next to a granted file", Create, "/etc/granted.conf.tmp", Verdict{Cause: OutsideWriteRoots}},
		{"create in /", Create, "/x", Verdict{Cause: OutsideWriteRoots}},
		{"create a write root's sibling", Create, "/wx", Verdict{Cause: OutsideWriteRoots}},
		{"create in a masked dir", Create, "/home/u/.ssh/authorized_keys", Verdict{Cause: Masked, At: "/home/u/.ssh"}},
		{"remove in a root", Remove, "/w/old", Verdict{Allowed: true}},
		{"remove a write root itself", Remove, "/w", Verdict{Cause: OutsideWriteRoots}},
		{"remove a granted file (its directory is not granted)", Remove, "/etc/granted.conf", Verdict{Cause: OutsideWriteRoots}},
		{"remove .git", Remove, "/w/.git", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"remove outside", Remove, "/etc/hosts", Verdict{Cause: OutsideWriteRoots}},
		{"rename from a root", RenameFrom, "/w/a", Verdict{Allowed: true}},
		{"rename from outside", RenameFrom, "/etc/a", Verdict{Cause: OutsideWriteRoots}},
		{"rename to a root", RenameTo, "/tmp/b", Verdict{Allowed: true}},
		{"rename to outside", RenameTo, "/srv/b", Verdict{Cause: OutsideWriteRoots}},
		{"rename onto .git", RenameTo, "/w/.git", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"rename onto an ancestor of a carve-out", RenameTo, "/w/sub", Verdict{Cause: CarveOut, At: "/w/sub/.git"}},
		{"create an ancestor of a carve-out is fine", Create, "/w/sub", Verdict{Allowed: true}},
		{"link from a root", LinkSource, "/w/a", Verdict{Allowed: true}},
		{"link from outside", LinkSource, "/etc/shadow", Verdict{Cause: OutsideWriteRoots}},
		{"link from .git", LinkSource, "/w/.git/config", Verdict{Cause: CarveOut, At: "/w/.git"}},
		{"chmod in a root", Metadata, "/w/run.sh", Verdict{Allowed: true}},
		{"chmod outside", Metadata, "/etc/shadow", Verdict{Cause: OutsideWriteRoots}},
		{"chmod the terminal", Metadata, "/dev/pts/3", Verdict{Allowed: true}},
		{"mknod a device in a root", MakeDevice, "/w/sda", Verdict{Cause: DeviceNode}},
		{"mknod a device in .git", MakeDevice, "/w/.git/sda", Verdict{Cause: CarveOut, At: "/w/.git"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Path(tt.access, tt.path); got != tt.want {
				t.Errorf("Path(%d, %s) = %+v, want %+v", tt.access, tt.path, got, tt.want)
			}
		})
	}
}

func TestCheckerReadOnlyMode(t *testing.T) {
	pol := policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}, Devices: policy.DefaultDevices}
	c := NewChecker(pol, Extra{})
	for _, p := range []string{"/tmp/x", "/w/a", "/"} {
		if v := c.Path(Create, p); v.Allowed || v.Cause != OutsideWriteRoots {
			t.Errorf("read-only: Create %s = %+v, want OutsideWriteRoots", p, v)
		}
	}
	if v := c.Path(WriteObject, "/dev/null"); !v.Allowed {
		t.Errorf("read-only: /dev/null not writable: %+v", v)
	}
}

func TestCheckerUnrestricted(t *testing.T) {
	pol := policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true, WriteRoots: []string{"/"}, CarveOuts: []string{"/w/.git"}}
	c := NewChecker(pol, Extra{})
	for _, a := range []Access{WriteObject, Create, Remove, RenameTo, Metadata} {
		if v := c.Path(a, "/w/.git/x"); !v.Allowed {
			t.Errorf("unrestricted: access %d = %+v, want allowed", a, v)
		}
	}
}

func TestVerdictReason(t *testing.T) {
	for v, want := range map[Verdict]string{
		{Cause: OutsideWriteRoots}:       "outside the writable roots",
		{Cause: CarveOut, At: "/w/.git"}: "inside the read-only carve-out /w/.git",
		{Cause: Masked, At: "/w/secret"}: "inside /w/secret, which the guard hides",
		{Cause: DeviceNode}:              "device nodes cannot be created in the sandbox",
	} {
		if got := v.Reason(); got != want {
			t.Errorf("%+v: got %q, want %q", v, got, want)
		}
	}
}

func TestIsolatedNetworkAllows(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "::ffff:127.0.0.1": true,
		"0.0.0.0": true, "::": true,
		"192.0.2.2": false, "10.0.0.1": false, "8.8.8.8": false, "2001:db8::1": false, "::ffff:192.0.2.2": false,
		"fe80::1": false, "169.254.1.1": false, "224.0.0.1": false,
	} {
		if got := IsolatedNetworkAllows(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: got %t, want %t", addr, got, want)
		}
	}
}
