package policy

import (
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/profiles"
)

// A domain grant must not run as no network (the caller believes hosts are
// reachable) nor as full network (wider than granted) while the proxy is
// not wired in: Build refuses it, naming the field.
func TestBuildRefusesDomainsUntilWired(t *testing.T) {
	add := profiles.BuildNetwork(&profiles.Network{Enabled: true, AllowedDomains: []string{"pypi.org"}}, nil, nil)
	pol, err := Build(Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Additional: add})
	if err == nil || !strings.Contains(err.Error(), "additional_permissions.network.allowed_domains") {
		t.Fatalf("Build = %+v, %v; want an error naming allowed_domains", pol.Network, err)
	}
}
