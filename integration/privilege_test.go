//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// outsideDir is a directory outside every writable root of the tests'
// calls (t.TempDir is under /tmp, a writable root of workspace-write),
// symlinks resolved.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(varTmpDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCapabilitiesDropped: the command holds no capability, whoever runs
// sbx (issue #13 §1): as root, every set and the bounding set are empty;
// danger-full-access, which is no sandbox, keeps root's.
func TestCapabilitiesDropped(t *testing.T) {
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "capeff")
			sets := []string{"CapInh", "CapPrm", "CapEff", "CapAmb"}
			// Without a user namespace an unprivileged launch has no
			// CAP_SETPCAP to empty its bounding set with (its command gets
			// nothing from it: no_new_privs stops file capabilities).
			if os.Getuid() == 0 || rep.Enforcement.UserNamespace {
				sets = append(sets, "CapBnd")
			}
			for _, set := range sets {
				if !strings.Contains(r.Detail, set+": 0000000000000000") {
					t.Errorf("%s not empty: %s", set, r.Detail)
				}
			}
			if !rep.Enforcement.CapabilitiesDropped || len(rep.Enforcement.Capabilities) != 0 {
				t.Errorf("report: capabilities_dropped %t, capabilities %q; want true and none", rep.Enforcement.CapabilitiesDropped, rep.Enforcement.Capabilities)
			}
			if rep.Enforcement.PIDNamespace && (!rep.Enforcement.UTSNamespace || !rep.Enforcement.IPCNamespace) {
				t.Errorf("report: uts_namespace %t, ipc_namespace %t; want both with the PID namespace", rep.Enforcement.UTSNamespace, rep.Enforcement.IPCNamespace)
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("the baseline needs root: an unprivileged user has no capabilities to keep")
		}
		r, _ := probe(t, workspace(t), danger, "capeff")
		if strings.Contains(r.Detail, "CapEff: 0000000000000000") {
			t.Errorf("root in danger-full-access has no capabilities, so the check above proves nothing: %s", r.Detail)
		}
	})
}

// TestHostEscapes: what a command that kept root's capabilities did to the
// host from inside workspace-write (issue #13 §1), each refused now, as
// root and unprivileged. Outside the writable roots the read-only mounts
// refuse attribute changes (EROFS) before any capability check; where no
// mount namespace can be had the capability check does (EPERM), or the
// report says the gap (file-attributes).
func TestHostEscapes(t *testing.T) {
	outside := outsideDir(t)
	file := writeFile(t, filepath.Join(outside, "tool"), "#!/bin/sh\n")
	// What the file system under /var/tmp has at all (the VM's initramfs
	// has no inode flags): the same action on a scratch file, without sbx.
	scratch := writeFile(t, filepath.Join(outside, "scratch"), "")
	unsupported := map[string]string{}
	for _, op := range []string{"setxattr-cap", "setxattr-acl", "chattr"} {
		if r := probeDirect(t, nil, op, scratch); r.Errno == "ENOTTY" || r.Errno == "EOPNOTSUPP" {
			unsupported[op] = fmt.Sprintf("the file system of %s does not support it: %s", outside, r)
		}
	}
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			ws := workspace(t)
			for _, c := range []struct {
				op        []string
				errno     string // with read-only mounts
				withoutNS string // without a mount namespace; "" = the report names file-attributes
			}{
				{[]string{"setxattr-cap", file}, "EROFS", "EPERM"},
				{[]string{"setxattr-acl", file}, "EROFS", ""},
				{[]string{"chattr", file}, "EROFS", "EPERM"},
				{[]string{"sethostname"}, "EPERM", "EPERM"},
				{[]string{"setdomainname"}, "EPERM", "EPERM"},
				{[]string{"clock-settime"}, "EPERM", "EPERM"},
			} {
				if why := unsupported[c.op[0]]; why != "" {
					t.Logf("%s not checked: %s", c.op[0], why)
					continue
				}
				r, rep := probe(t, ws, mode, c.op...)
				switch {
				case rep.Enforcement.ReadOnlyRoot:
					want(t, r, c.errno)
				case c.withoutNS != "":
					want(t, r, c.withoutNS)
				case !strings.Contains(rep.degraded("file-attributes"), "extended attributes"):
					t.Errorf("%s: no read-only mounts and no file-attributes downgrade: %v", r, rep.degradedFeatures())
				}
			}
			if b, err := os.ReadFile("/proc/sys/kernel/dmesg_restrict"); err == nil && strings.TrimSpace(string(b)) == "1" {
				r, _ := probe(t, ws, mode, "syslog")
				want(t, r, "EPERM")
			} else {
				t.Log("kernel.dmesg_restrict is not 1: every user may read the kernel log, so syslog is not checked")
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("the baseline needs root")
		}
		// Root in a container's default capability set lacks some of
		// these: without sbx they fail too, so they prove nothing here.
		needs := map[string]struct {
			c    int
			name string
		}{"chattr": {unix.CAP_LINUX_IMMUTABLE, "CAP_LINUX_IMMUTABLE"}, "sethostname": {unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}}
		for _, op := range [][]string{{"setxattr-acl", file}, {"chattr", file}, {"sethostname"}} {
			if why := unsupported[op[0]]; why != "" {
				t.Logf("%s not checked: %s", op[0], why)
				continue
			}
			if n, ok := needs[op[0]]; ok && !hasCap(n.c) {
				t.Logf("%s not checked: this root lacks %s (a container's capability set)", op[0], n.name)
				continue
			}
			r, _ := probe(t, workspace(t), danger, op...)
			want(t, r, "")
		}
	})
}

// TestAttributesInsideRoots: the read-only mounts leave the writable
// roots alone: the owner of a file in the workspace still sets its ACL.
func TestAttributesInsideRoots(t *testing.T) {
	ws := workspace(t)
	file := writeFile(t, filepath.Join(ws, "mine"), "x\n")
	r, _ := probe(t, ws, wsWrite, "setxattr-acl", file)
	if r.Errno == "EOPNOTSUPP" {
		t.Skipf("the workspace's file system has no POSIX ACLs: %s", r)
	}
	want(t, r, "")
}

// TestHostEnvironUnreadable: sbx's own environment, which holds what it
// strips from the command's (a *TOKEN* variable), and every host
// process's, are out of the command's reach: its /proc shows the call's
// PID namespace only, and it has no capability to read across users.
func TestHostEnvironUnreadable(t *testing.T) {
	const secret = "sbx-it-7f3a9c-secret-value"
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			ws := workspace(t)
			rp := filepath.Join(t.TempDir(), "report.json")
			out := sbx(t, opts{args: append(append([]string{"run", "--cwd", ws, "--report", rp}, mode...), "--", probeBin, "scan-environ", secret),
				dir: ws, env: []string{"SBX_IT_PROBE_TOKEN=" + secret}})
			r := parseProbe(t, out)
			t.Logf("probe scan-environ -> %s", r)
			if r.OK {
				t.Errorf("the command read the stripped secret: %s", r.Detail)
			}
			rep := readReport(t, rp)
			if rep.Enforcement.PIDNamespace && rep.Enforcement.Procfs != "private" && rep.degraded("procfs") == "" {
				t.Errorf("a PID namespace, procfs %q and no procfs downgrade", rep.Enforcement.Procfs)
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		// The baseline: without the sandbox the same scan finds it.
		ws := workspace(t)
		out := sbx(t, opts{args: append(append([]string{"run", "--cwd", ws}, danger...), "--", probeBin, "scan-environ", secret),
			dir: ws, env: []string{"SBX_IT_PROBE_TOKEN=" + secret}})
		if r := parseProbe(t, out); !r.OK {
			t.Errorf("danger-full-access did not see sbx's environment, so the check above proves nothing: %s", r)
		}
	})
}

// TestCapAdd: --cap-add keeps exactly the capabilities named (reported),
// root only; an unprivileged caller is refused (125) before anything runs.
func TestCapAdd(t *testing.T) {
	ws := workspace(t)
	args := []string{"--mode", "workspace-write", "--network", "--cap-add", "net_raw"}
	// Root without CAP_SYS_ADMIN (in a container) is refused as well: its
	// command would run in a user namespace.
	if !privileged() {
		marker := filepath.Join(ws, "marker")
		out := sbx(t, opts{dir: ws, args: append(append([]string{"run"}, args...), "--", probeBin, "create", marker)})
		if out.code != 125 || !strings.Contains(out.stderr, "--cap-add") {
			t.Errorf("unprivileged --cap-add: exit %d, stderr %q; want 125 naming --cap-add", out.code, out.stderr)
		}
		wantAbsent(marker)(t)
		return
	}
	r, rep := probe(t, ws, args, "capeff")
	// CAP_NET_RAW is bit 13: 0x2000 in every set, nothing else.
	for _, set := range []string{"CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if !strings.Contains(r.Detail, set+": 0000000000002000") {
			t.Errorf("%s is not exactly CAP_NET_RAW: %s", set, r.Detail)
		}
	}
	if got := rep.Enforcement.Capabilities; len(got) != 1 || got[0] != "CAP_NET_RAW" {
		t.Errorf("report capabilities %q, want [CAP_NET_RAW]", got)
	}
	r, _ = probe(t, ws, args, "socket", "packet")
	want(t, r, "")
	r, _ = probe(t, ws, args, "sethostname")
	want(t, r, "EPERM")
}
