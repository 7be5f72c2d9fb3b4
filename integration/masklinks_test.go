//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardMaskHardLink: a guard mask is a mount over a path, so a hard
// link made before the call (`ln .env innocent`) names the masked content
// where no mount covers it (DESIGN.md invariant 5). The masked path still
// reads as the mask; the link is refused (EACCES) by the supervisor, best
// effort, with a denial naming the link and the masked file; the report
// says mask-links in every case, and --require mask-links refuses to run.
// A masked file with a single name is no mask-links downgrade.
func TestGuardMaskHardLink(t *testing.T) {
	c := caps(t)
	// The workspace and the masked files on one file system (/var/tmp),
	// outside each other: a deny_read path inside a write root would be
	// a carve-out as well.
	ws, out := varTmpDir(t), varTmpDir(t)
	dir := filepath.Join(out, "dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := writeFile(t, filepath.Join(out, ".env"), "secret\n")
	inner := writeFile(t, filepath.Join(dir, "key"), "secret\n")
	link, innerLink := filepath.Join(ws, "innocent"), filepath.Join(ws, "innocent-key")
	for _, l := range [][2]string{{secret, link}, {inner, innerLink}} {
		if err := os.Link(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct{ name, deny, masked, link, maskRead string }{
		{"file", secret, secret, link, ""},
		{"directory", dir, inner, innerLink, "ENOENT"},
	} {
		for _, mode := range [][]string{wsOnly, readOnly} {
			t.Run(m.name+"/"+mode[1], func(t *testing.T) {
				flags := append(append([]string{}, mode...), "--guard", guardFile(t, m.deny))
				r, rep := probe(t, ws, flags, "read", m.masked)
				reason := rep.degraded("mask-links")
				if !strings.Contains(reason, m.deny) {
					t.Errorf("degraded: want a mask-links entry naming %s, got %+v", m.deny, rep.Degraded)
				}
				if !c.namespaces {
					want(t, r, "") // not masked at all: the mask downgrade (TestGuardMask)
					return
				}
				want(t, r, m.maskRead)
				if r.OK && r.Detail != "read 0 bytes" {
					t.Errorf("read %s: %s, want 0 bytes (masked)", m.masked, r.Detail)
				}
				r, rep = probe(t, ws, flags, "read", m.link)
				if !c.supervised {
					// Nothing stops the link: the downgrade says so.
					want(t, r, "")
					if !strings.Contains(reason, "not prevented") {
						t.Errorf("mask-links without the supervisor: %q, want it to say reading is not prevented", reason)
					}
					return
				}
				want(t, r, "EACCES")
				if !strings.Contains(reason, "best effort") {
					t.Errorf("mask-links with the supervisor: %q, want it to say best effort", reason)
				}
				var reads []denial
				for _, d := range rep.Denials {
					if d.Operation == "read" {
						reads = append(reads, d)
					}
				}
				if len(reads) != 1 || reads[0].Path != m.link || !strings.HasPrefix(reads[0].Reason, "forbidden by guard") || !strings.Contains(reads[0].Reason, m.masked) {
					t.Errorf("read denials %+v, want one of %s, forbidden by guard, naming %s", reads, m.link, m.masked)
				}
				var retry struct {
					SandboxPermissions string            `json:"sandbox_permissions"`
					Unresolved         []json.RawMessage `json:"unresolved"`
				}
				if err := json.Unmarshal(rep.raw["retry"], &retry); err != nil || retry.SandboxPermissions != "" || len(retry.Unresolved) != 1 {
					t.Errorf("retry %s: want no escalation, one unresolved (%v)", rep.raw["retry"], err)
				}
			})
		}
	}
	t.Run("require", func(t *testing.T) {
		marker := filepath.Join(ws, "marker")
		o, rep := run(t, ws, append(append([]string{}, wsOnly...), "--guard", guardFile(t, secret), "--require", "mask-links"), probeBin, "create", marker)
		if o.code != 125 || !strings.Contains(o.stderr, "mask-links") || o.stdout != "" {
			t.Errorf("--require mask-links with a linked mask: exit %d, stdout %q, stderr %q; want 125 naming mask-links", o.code, o.stdout, o.stderr)
		}
		oneLine(t, "stderr", o.stderr)
		wantAbsent(marker)(t)
		if rep != nil {
			t.Errorf("a refused call wrote a report")
		}
	})
	t.Run("single-link", func(t *testing.T) {
		single := writeFile(t, filepath.Join(out, "single"), "secret\n")
		flags := append(append([]string{}, wsOnly...), "--guard", guardFile(t, single))
		_, rep := probe(t, ws, flags, "read", single)
		if d := rep.degraded("mask-links"); d != "" {
			t.Errorf("mask-links for a file with one name: %q", d)
		}
		o, _ := run(t, ws, append(flags, "--require", "mask-links"), probeBin, "read", single)
		if o.code != 0 {
			t.Errorf("--require mask-links with a single-link mask: exit %d, stderr %q; want 0", o.code, o.stderr)
		}
	})
	wantContent(secret, "secret\n")(t)
}
