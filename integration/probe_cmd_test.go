//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probeCmdRow is one row of `sbx probe --json`.
type probeCmdRow struct {
	Probe, Target, Result, Errno, Expected string
	Match                                  bool
}

// TestProbeCommand runs `sbx probe --json` per mode on this kernel and
// checks each row twice: against sbx's own expectation (match), and the
// rows that define the mode against a matrix written out here, so a wrong
// expectation in sbx cannot hide a wrong result.
func TestProbeCommand(t *testing.T) {
	root := os.Geteuid() == 0
	c := caps(t)
	// The kernel-dependent rows: what this kernel and user must give.
	outcome := map[bool]string{true: "allowed", false: "denied"}
	// Without namespaces (unprivileged, no user namespaces) network off
	// means AF_UNIX only, so even a server inside is out of reach.
	inside := outcome[c.namespaces]
	// A PID namespace hides the processes outside, a network namespace the
	// abstract sockets; Landlock scopes (ABI 6) refuse both without them.
	scoped := c.namespaces || c.abi >= 6
	// RESOLVE_UNIX (ABI 9) makes sockets outside the writable roots
	// unreachable with the network off.
	pathUnix := outcome[c.abi < 9 && !c.supervised]
	cases := []struct {
		name string
		args []string
		// want maps "probe target" to the result; targets are written with
		// WS for the workspace and GRANT for the --allow-write directory.
		want map[string]string
	}{
		{"read-only", readOnly, map[string]string{
			"read /etc": "allowed", "write /etc/": "denied", "create /etc": "denied",
			"create WS": "denied", "create /tmp": "denied", "write /dev/null": "allowed",
			"create GRANT":        "denied",
			"tcp-connect outside": "denied", "tcp-connect inside": inside, "udp-send outside": "denied",
			"unix-connect WS": pathUnix, "unix-connect abstract": outcome[!scoped], "signal outside": outcome[!scoped],
		}},
		{"workspace-write", wsWrite, map[string]string{
			"read /etc": "allowed", "write /etc/": "denied", "create /etc": "denied",
			"create WS": "allowed", "create WS/.git": "denied", "write WS/.git/": "denied",
			"create /tmp":         "allowed",
			"tcp-connect outside": "denied", "tcp-connect inside": inside, "udp-send outside": "denied",
			"unix-connect WS": "allowed", "unix-connect abstract": outcome[!scoped], "signal outside": outcome[!scoped],
		}},
		{"network", append([]string{"--network"}, wsWrite...), map[string]string{
			"create WS": "allowed", "create /etc": "denied",
			"tcp-connect outside": "allowed", "tcp-connect inside": "allowed", "udp-send outside": "allowed",
			"unix-connect WS": "allowed", "signal outside": outcome[!scoped],
		}},
		{"allow-write", append([]string{"--allow-write", "GRANT"}, readOnly...), map[string]string{
			"create GRANT": "allowed", "create WS": "denied", "create /etc": "denied",
			"tcp-connect outside": "denied",
		}},
		{"danger-full-access", danger, map[string]string{
			"create WS": "allowed", "create WS/.git": "allowed", "create /etc": map[bool]string{true: "allowed", false: "denied"}[root],
			"tcp-connect outside": "allowed", "udp-send outside": "allowed",
			"unix-connect abstract": "allowed", "signal outside": "allowed",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t)
			dotGit(t, ws)
			grant := workspace(t)
			args := []string{"probe", "--json", "--cwd", ws}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "GRANT", grant))
			}
			out := sbx(t, opts{args: append(args, grant), dir: ws})
			var rep struct {
				Mode string
				Rows []probeCmdRow
			}
			if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
				t.Fatalf("exit %d, output not JSON: %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
			}
			got := map[string]string{}
			for _, r := range rep.Rows {
				if !r.Match {
					t.Errorf("%s %s: %s (%s), sbx expected %s", r.Probe, r.Target, r.Result, r.Errno, r.Expected)
				}
				if r.Result == "allowed" && r.Errno != "" || r.Result != "allowed" && r.Errno == "" {
					t.Errorf("%s %s: result %s with errno %q", r.Probe, r.Target, r.Result, r.Errno)
				}
				got[probeKey(r, ws, grant)] = r.Result
			}
			if out.code != 0 {
				t.Errorf("exit %d with every row matching? stderr: %s", out.code, out.stderr)
			}
			for k, w := range tc.want {
				if g, ok := got[k]; !ok {
					t.Errorf("no row %q in %v", k, got)
				} else if g != w {
					t.Errorf("%s: %s, want %s", k, g, w)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(ws, ".sbx-probe-*")); len(left) > 0 {
				t.Errorf("probe files left behind: %v", left)
			}
		})
	}
}

// probeKey names a row the way the want tables do: the workspace and the
// grant as WS and GRANT, a written file by its directory ("write /etc/"),
// listeners by where they are.
func probeKey(r probeCmdRow, ws, grant string) string {
	target := r.Target
	switch {
	case r.Probe == "write" && r.Target != os.DevNull:
		target = filepath.Dir(target) + "/"
	case strings.HasPrefix(target, "inside "):
		target = "inside"
	case r.Probe == "tcp-connect" || r.Probe == "udp-send" || r.Probe == "signal":
		target = "outside"
	case r.Probe == "unix-connect" && strings.HasPrefix(target, "@"):
		target = "abstract"
	case r.Probe == "unix-connect":
		target = filepath.Dir(target)
	}
	target = strings.ReplaceAll(target, grant, "GRANT")
	target = strings.ReplaceAll(target, ws, "WS")
	return r.Probe + " " + target
}
