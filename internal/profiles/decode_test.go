package profiles

import "testing"

// TestDecodeProfileExact: the escapes of a profile (DESIGN.md invariant 4).
func TestDecodeProfileExact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"network without enabled", `{"network":{}}`, "network.enabled: required"},
		{"network enabled null", `{"network":{"enabled":null}}`, "network.enabled: required"},
		{"duplicate enabled", `{"network":{"enabled":false,"enabled":true}}`, "network.enabled: duplicate key"},
		{"case variant of network", `{"NETWORK":{"enabled":true}}`, "NETWORK: unknown field (did you mean network?)"},
		{"case variant of write", `{"file_system":{"Write":["/"]}}`, "file_system.Write: unknown field (did you mean write?)"},
		{"duplicate write", `{"file_system":{"write":[],"write":["/"]}}`, "file_system.write: duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeProfile([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	p, err := DecodeProfile([]byte(`{"network":{"enabled":false}}`))
	if err != nil || p.NetworkEnabled() {
		t.Errorf(`{"network":{"enabled":false}} = %+v, %v; want accepted, network off`, p, err)
	}
}
