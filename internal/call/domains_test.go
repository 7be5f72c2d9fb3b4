package call

import (
	"context"
	"errors"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestResolveRefusedBeforeAsking: a pin where no proxy would run is
// refused before the approver is asked (it was asked, then the call was
// refused); with a proxy the same pin is asked about and runs. sbx run
// relies on this check instead of its own (#28).
func TestResolveRefusedBeforeAsking(t *testing.T) {
	f := newFixture(t)
	r := f.request()
	a := &asker{outcome: escalate.AllowedOnce}
	r.Additional, r.Resolve = write(f.out), pinned(t, "a.test:443:127.0.0.1")
	r.Escalation.SandboxPermissions, r.Escalation.Justification, r.Escalation.Approver = profiles.WithAdditionalPermissions, "j", a
	_, err := Prepare(context.Background(), r)
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || fe.Field != "resolve" || len(a.asked) != 0 {
		t.Fatalf("%v, asked %d; want refused naming resolve, nobody asked", err, len(a.asked))
	}
	r.Additional = profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}, nil, []string{f.out})
	if _, err := Prepare(context.Background(), r); err != nil || len(a.asked) != 1 {
		t.Fatalf("with a proxy: %v, asked %d", err, len(a.asked))
	}
}

// TestPrivateAddressesAsGiven: allow_private_addresses on a profile that
// does not enable the network (sbx run's --allow-private-addresses beside
// --network and --deny-domain) is refused as having no effect, naming it.
func TestPrivateAddressesAsGiven(t *testing.T) {
	f := newFixture(t)
	for _, network := range []bool{false, true} {
		r := f.request()
		r.Network, r.Preauthorized = network, true
		r.Additional = profiles.Profile{Network: &profiles.Network{DeniedDomains: []string{"b.test"}, AllowPrivateAddresses: true}}
		_, err := Prepare(context.Background(), r)
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != "additional_permissions.network.allow_private_addresses" {
			t.Errorf("network %v: %v; want refused naming allow_private_addresses", network, err)
		}
	}
}
