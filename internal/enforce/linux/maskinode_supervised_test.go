//go:build linux && amd64

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSupervisorMaskedLink: under the real kernel, an open of another
// name of a masked file is refused (EACCES) with a denial naming the name
// opened and the masked path; the masked path itself reads as the mask
// (/dev/null), as before.
func TestSupervisorMaskedLink(t *testing.T) {
	for launch, sys := range launchVariants(t) {
		t.Run(launch, func(t *testing.T) {
			base := maskFiles(t)
			ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
			pol := maskPolicy(t, ws, out+"/two", out+"/dir")
			got, res, _ := runProbe(t, pol, sys, ws, "read", ws+"/two-link", "--", "write", ws+"/two-link", "--", "read", ws+"/inner-link", "--", "read", out+"/two")
			if want := "EACCES\nEACCES\nEACCES\nOK"; got != want {
				t.Errorf("probe:\n%s\nwant:\n%s", got, want)
			}
			want := []wantDenial{{"read", ws + "/two-link"}, {"write", ws + "/two-link"}, {"read", ws + "/inner-link"}, {"read", out + "/two"}}
			if ds := denialSet(res.Denials); !slices.Equal(ds, want) {
				t.Errorf("denials %+v, want %+v", ds, want)
			}
			for _, d := range res.Denials[:3] {
				if !strings.HasPrefix(d.Reason, "forbidden by guard: a hard link of "+out) {
					t.Errorf("denial %+v: reason does not name the masked file", d)
				}
			}
			if b, _ := os.ReadFile(out + "/two"); string(b) != "secret\n" {
				t.Errorf("the masked file changed: %q", b)
			}
		})
	}
}
