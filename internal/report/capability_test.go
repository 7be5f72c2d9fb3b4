package report

import "testing"

func TestNeededCapability(t *testing.T) {
	for _, tt := range []struct{ reason, want string }{
		{"/ws (owner uid 1000): ...; " + CapabilityReason("CAP_DAC_OVERRIDE"), "CAP_DAC_OVERRIDE"},
		{CapabilityReason("CAP_FOWNER"), "CAP_FOWNER"},
		{"outside the writable roots", ""},
		{"needs CAP_X; and more (cap_add)", ""},
		{"needs nothing (cap_add)", ""},
		{"/ws: ...; " + NoCapabilityReason, ""},
	} {
		if got := NeededCapability(tt.reason); got != tt.want {
			t.Errorf("NeededCapability(%q) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}
