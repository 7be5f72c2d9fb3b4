//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requireFeatures are the names --require accepts (report.Features).
var requireFeatures = []string{
	"landlock", "landlock-refer", "landlock-truncate", "landlock-scope", "landlock-resolve-unix",
	"netns", "mountns", "pidns", "mask", "carve-out-create", "seccomp", "denial-reports", "file-attributes", "procfs",
	"mask-links",
}

// shapedCall prepares a workspace (and guard) for a call of shape s and
// returns the sbx flags for it, before "--".
func shapedCall(t *testing.T, s callShape) (ws string, flags []string) {
	t.Helper()
	ws = workspace(t)
	flags = []string{"--mode", s.mode}
	if s.mode == "workspace-write" {
		// The cwd is then the only repository: /tmp is a write root but no
		// repository, so it has no carve-outs.
		flags = append(flags, "--exclude-tmpdir")
	}
	if s.network {
		flags = append(flags, "--network")
	}
	if s.git {
		dotGit(t, ws)
		for _, name := range []string{".codex", ".agents"} {
			if err := os.Mkdir(filepath.Join(ws, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.masked {
		// Outside every write root: under one, the guard would make it a
		// read-only carve-out as well.
		secret := writeFile(t, filepath.Join(varTmpDir(t), "secret"), "secret\n")
		flags = append(flags, "--guard", guardFile(t, secret))
	}
	return ws, flags
}

// guardFile writes a deployment guard forbidding reading paths.
func guardFile(t *testing.T, denyRead ...string) string {
	t.Helper()
	b, err := json.Marshal(map[string][]string{"deny_read": denyRead})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "guard.json"), string(b))
}

var shapes = []struct {
	name  string
	shape callShape
}{
	{"read-only", callShape{mode: "read-only"}},
	{"read-only-network", callShape{mode: "read-only", network: true}},
	{"workspace-write", callShape{mode: "workspace-write"}},
	{"workspace-write-git", callShape{mode: "workspace-write", git: true}},
	{"workspace-write-git-guard", callShape{mode: "workspace-write", git: true, masked: true}},
	{"workspace-write-network-git", callShape{mode: "workspace-write", network: true, git: true}},
	// (A guard would restrict danger-full-access: see TestGuardMask.)
	{"danger-full-access", callShape{mode: "danger-full-access", git: true}},
}

// TestDegradedReport: the report lists exactly the features this kernel and
// user cannot enforce for the call, no more (a feature that works must not be
// reported missing) and no fewer (never degrade silently).
func TestDegradedReport(t *testing.T) {
	c := caps(t)
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			ws, flags := shapedCall(t, s.shape)
			_, rep := probe(t, ws, flags, "read", "/etc/passwd")
			wantDegraded(t, rep, c.degraded(s.shape))
			if s.name == "workspace-write-git-guard" {
				// The call that needs every feature but carve-out-create:
				// one line for integration/vm's summary (run-all prints it).
				got := rep.degradedFeatures()
				var enforced []string
				for _, f := range requireFeatures {
					if !slices.Contains(c.unenforced(s.shape), f) && f != "carve-out-create" {
						enforced = append(enforced, f)
					}
				}
				t.Logf("@@CAPS uid=%d landlock_abi=%d namespaces=%t supervised=%t reported: enforced=%s degraded=%s",
					os.Getuid(), c.abi, c.namespaces, c.supervised, strings.Join(enforced, ","), strings.Join(got, ","))
			}
			for _, d := range rep.Degraded {
				switch d.Feature {
				case "mountns", "carve-out-create":
					if dotgit := filepath.Join(ws, ".git"); !strings.Contains(d.Reason, dotgit) {
						t.Errorf("degraded %s: reason %q does not name %s", d.Feature, d.Reason, dotgit)
					}
				case "pidns", "netns", "mask":
					if !strings.Contains(d.Reason, "user namespaces") {
						t.Errorf("degraded %s: reason %q does not say user namespaces are missing", d.Feature, d.Reason)
					}
				}
			}
		})
	}
}

// TestRequire: --require FEATURE runs the command where FEATURE is
// enforced, and refuses to run it (exit 125, one line on stderr naming the
// feature, no report) where the kernel or the user lacks it.
func TestRequire(t *testing.T) {
	c := caps(t)
	// Every feature in a call that needs them all: the network off, an
	// existing .git, a guard mask; and a workspace without .git for
	// carve-out-create.
	full := callShape{mode: "workspace-write", git: true, masked: true}
	bare := callShape{mode: "workspace-write"}
	for _, f := range requireFeatures {
		s := full
		if f == "carve-out-create" {
			s = bare
		}
		t.Run(f, func(t *testing.T) {
			wantRequire(t, s, []string{f}, slices.Contains(c.unenforced(s), f))
		})
	}
	// Several at once: the call runs only if every one is enforced.
	var enforced []string
	for _, f := range requireFeatures {
		if !slices.Contains(c.unenforced(full), f) {
			enforced = append(enforced, f)
		}
	}
	t.Run("all-enforced", func(t *testing.T) {
		t.Logf("enforced here: %q", enforced)
		wantRequire(t, full, enforced, false)
	})
	t.Run("enforced-plus-one-missing", func(t *testing.T) {
		missing := c.unenforced(bare)
		if len(missing) == 0 {
			t.Skip("every feature is enforced on this kernel for this user: none to add")
		}
		wantRequire(t, bare, append(slices.Clone(enforced), missing[0]), true)
	})
}

// wantRequire runs `sbx run SHAPE --require F... -- probe create marker`.
func wantRequire(t *testing.T, s callShape, required []string, refused bool) {
	t.Helper()
	ws, flags := shapedCall(t, s)
	for _, f := range required {
		flags = append(flags, "--require", f)
	}
	marker := filepath.Join(ws, "marker")
	out, rep := run(t, ws, flags, probeBin, "create", marker)
	if !refused {
		if out.code != 0 {
			t.Fatalf("--require %q: exit %d, want 0 (enforced here)\nstdout: %s\nstderr: %s", required, out.code, out.stdout, out.stderr)
		}
		want(t, parseProbe(t, out), "")
		wantContent(marker, probeContent)(t)
		return
	}
	if out.code != 125 {
		hint := ""
		if caps(t).abi == 0 {
			hint = " (this kernel has no Landlock: sbx reports only \"landlock\" degraded, and --require of a part of Landlock must refuse as it does on a kernel with a lower ABI)"
		}
		t.Errorf("--require %q: exit %d, want 125: not enforced here%s\nstdout: %s\nstderr: %s", required, out.code, hint, out.stdout, out.stderr)
		return
	}
	oneLine(t, "stderr", out.stderr)
	missing := ""
	for _, f := range required {
		if slices.Contains(caps(t).unenforced(s), f) {
			missing = f
			break
		}
	}
	if !strings.Contains(out.stderr, missing) {
		t.Errorf("stderr does not name the missing feature %s: %q", missing, out.stderr)
	}
	if out.stdout != "" {
		t.Errorf("the command ran: stdout %q", out.stdout)
	}
	wantAbsent(marker)(t)
	if rep != nil {
		t.Errorf("a refused call wrote a report")
	}
}
