package profiles

import (
	"reflect"
	"strings"
	"testing"
)

func dom(allowed, denied []string, private bool) Profile {
	return New(&Network{Enabled: len(allowed) > 0, AllowedDomains: allowed, DeniedDomains: denied, AllowPrivateAddresses: private}, nil, nil)
}

func TestMergeDomains(t *testing.T) {
	tests := []struct {
		name string
		in   []Profile
		want Profile
	}{
		{"union of allowed", []Profile{dom([]string{"pypi.org"}, nil, false), dom([]string{"*.pythonhosted.org", "PyPI.org"}, nil, false)},
			dom([]string{"*.pythonhosted.org", "pypi.org"}, nil, false)},
		{"covered entry folded", []Profile{dom([]string{"a.x.org"}, nil, false), dom([]string{"*.x.org"}, nil, false)},
			dom([]string{"*.x.org"}, nil, false)},
		{"union of denied, deny kept beside allow", []Profile{dom([]string{"*.x.org"}, []string{"a.x.org"}, false), dom(nil, []string{"b.x.org"}, false)},
			dom([]string{"*.x.org"}, []string{"a.x.org", "b.x.org"}, false)},
		{"full network wins over domains", []Profile{dom([]string{"pypi.org"}, []string{"evil.org"}, false), New(FullNetwork(), nil, nil)},
			New(&Network{Enabled: true, DeniedDomains: []string{"evil.org"}}, nil, nil)},
		{"private from any", []Profile{dom([]string{"pypi.org"}, nil, true), dom([]string{"a.org"}, nil, false)},
			dom([]string{"a.org", "pypi.org"}, nil, true)},
		{"deny only asks nothing", []Profile{dom(nil, []string{"evil.org"}, false)}, dom(nil, []string{"evil.org"}, false)},
	}
	for _, tt := range tests {
		got := Merge(tt.in...)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Merge = %+v, want %+v", tt.name, got.Network, tt.want.Network)
		}
	}
	if !dom(nil, []string{"evil.org"}, false).IsEmpty() {
		t.Error("a profile with only denied_domains should request nothing")
	}
	if dom([]string{"pypi.org"}, nil, false).NetworkEnabled() {
		t.Error("a domain profile must not read as full network")
	}
}

func TestIntersectDomains(t *testing.T) {
	full := New(FullNetwork(), nil, nil)
	tests := []struct {
		name               string
		requested, granted Profile
		want               Profile
	}{
		{"same domain", dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org"}, nil, false)},
		{"granted subset", dom([]string{"pypi.org", "a.org"}, nil, false), dom([]string{"a.org"}, nil, false), dom([]string{"a.org"}, nil, false)},
		{"granted within requested wildcard", dom([]string{"*.x.org"}, nil, false), dom([]string{"a.x.org"}, nil, false), dom([]string{"a.x.org"}, nil, false)},
		{"granted wildcard wider than requested: dropped, not full", dom([]string{"a.x.org"}, nil, false), dom([]string{"*.x.org"}, nil, false), Profile{}},
		{"granted not requested", dom([]string{"pypi.org"}, nil, false), dom([]string{"evil.org"}, nil, false), Profile{}},
		{"granted full for a domain request: dropped", dom([]string{"pypi.org"}, nil, false), full, Profile{}},
		{"requested full, granted domain", full, dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org"}, nil, false)},
		{"requested nothing, granted domain", New(nil, []string{"/a"}, nil), dom([]string{"pypi.org"}, nil, false), Profile{}},
		{"private needs both", dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org"}, nil, true), dom([]string{"pypi.org"}, nil, false)},
		{"private granted when asked", dom([]string{"pypi.org"}, nil, true), dom([]string{"pypi.org"}, nil, true), dom([]string{"pypi.org"}, nil, true)},
		{"granted deny kept", dom([]string{"*.x.org"}, nil, false), dom([]string{"*.x.org"}, []string{"a.x.org"}, false), dom([]string{"*.x.org"}, []string{"a.x.org"}, false)},
		{"port must lie within", dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org:22"}, nil, false), Profile{}},
	}
	for _, tt := range tests {
		got := Intersect(tt.requested, tt.granted)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Intersect = %+v, want %+v", tt.name, got.Network, tt.want.Network)
		}
	}
}

func TestCoversDomains(t *testing.T) {
	tests := []struct {
		name string
		q, p Profile
		want bool
	}{
		{"same", dom([]string{"pypi.org"}, nil, false), dom([]string{"pypi.org"}, nil, false), true},
		{"wildcard covers subdomain", dom([]string{"*.x.org"}, nil, false), dom([]string{"a.x.org"}, nil, false), true},
		{"wildcard does not cover apex", dom([]string{"*.x.org"}, nil, false), dom([]string{"x.org"}, nil, false), false},
		{"full covers domains", New(FullNetwork(), nil, nil), dom([]string{"x.org"}, nil, true), true},
		{"domains do not cover full", dom([]string{"x.org"}, nil, false), New(FullNetwork(), nil, nil), false},
		{"denied in q", dom([]string{"*.x.org"}, []string{"a.x.org"}, false), dom([]string{"a.x.org"}, nil, false), false},
		{"private not in q", dom([]string{"x.org"}, nil, false), dom([]string{"x.org"}, nil, true), false},
	}
	for _, tt := range tests {
		if got := tt.q.Covers(tt.p); got != tt.want {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNormalizeNetworkErrors(t *testing.T) {
	tests := []struct {
		name, in, err string
	}{
		{"bad allowed", `{"network":{"enabled":true,"allowed_domains":["pypi.org","b ad"]}}`, "network.allowed_domains[1]: "},
		{"non-ASCII denied", `{"network":{"enabled":false,"denied_domains":["bücher.de"]}}`, "network.denied_domains[0]: \"bücher.de\": non-ASCII host name"},
		{"domains without enabled", `{"network":{"enabled":false,"allowed_domains":["pypi.org"]}}`, "network.allowed_domains: needs network.enabled: true"},
		{"private without enabled", `{"network":{"enabled":false,"allow_private_addresses":true}}`, "network.allow_private_addresses: needs network.enabled: true"},
	}
	for _, tt := range tests {
		p, err := DecodeProfile([]byte(tt.in))
		if err == nil {
			_, err = p.Normalize("/")
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
	for _, in := range []string{
		`{"network":{"enabled":true,"Allowed_domains":["pypi.org"]}}`,
		`{"network":{"enabled":true,"allowed_domains":["a.org"],"allowed_domains":["b.org"]}}`,
		`{"network":{"enabled":true,"allowed_domains":"pypi.org"}}`,
	} {
		if _, err := DecodeProfile([]byte(in)); err == nil || !strings.Contains(err.Error(), "allowed_domains") {
			t.Errorf("DecodeProfile(%s) = %v, want an error naming allowed_domains", in, err)
		}
	}
	p, err := DecodeProfile([]byte(`{"network":{"enabled":true,"allowed_domains":["PyPI.org.","*.pythonhosted.org","pypi.org"],"allow_private_addresses":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.Normalize("/")
	if err != nil {
		t.Fatal(err)
	}
	want := dom([]string{"*.pythonhosted.org", "pypi.org"}, nil, true)
	if !reflect.DeepEqual(n, want) {
		t.Errorf("Normalize = %+v, want %+v", n.Network, want.Network)
	}
}

func TestNormalizeResponseDomains(t *testing.T) {
	in := `{"cwd":"/","requested":{"network":{"enabled":true,"allowed_domains":["a.x.org","pypi.org"]}},
		"granted":{"network":{"enabled":true,"allowed_domains":["*.x.org","PYPI.org"]}}}`
	req, err := DecodeNormalizeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	res, err := NormalizeResponse(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := dom([]string{"pypi.org"}, nil, false); !reflect.DeepEqual(res.Permissions, want) {
		t.Errorf("permissions = %+v, want %+v", res.Permissions.Network, want.Network)
	}
	// A granted wildcard does not swallow a granted entry that was requested.
	req.Granted = dom(nil, nil, false)
	req.Granted.Network = &Network{Enabled: true, AllowedDomains: []string{"*.x.org", "a.x.org"}}
	res, err = NormalizeResponse(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := dom([]string{"a.x.org"}, nil, false); !reflect.DeepEqual(res.Permissions, want) {
		t.Errorf("permissions = %+v, want %+v", res.Permissions.Network, want.Network)
	}
	req.Granted.Network = &Network{Enabled: true, AllowedDomains: []string{"a.x.org:x"}}
	if _, err := NormalizeResponse(req); err == nil || !strings.Contains(err.Error(), "granted.network.allowed_domains[0]") {
		t.Errorf("bad granted pattern: err = %v", err)
	}
}

// TestPatternsBuiltAroundValidation: the one reader of a profile's stored
// patterns drops an entry that does not parse (a Profile made without
// Normalize or New), and the comparisons built on it fail closed: such an
// entry is covered by nothing, so Covers is false for a profile that has
// one, however wide the other side.
func TestPatternsBuiltAroundValidation(t *testing.T) {
	raw := Profile{Network: &Network{Enabled: true, AllowedDomains: []string{"a.test", "a.test:x"}, DeniedDomains: []string{"*"}}}
	if got := raw.AllowedPatterns(); len(got) != 1 || got[0].String() != "a.test" {
		t.Errorf("AllowedPatterns = %v, want [a.test]", got)
	}
	if got := raw.DeniedPatterns(); got != nil {
		t.Errorf("DeniedPatterns = %v, want none", got)
	}
	if wide := dom([]string{"*.test", "a.test"}, nil, false); wide.Covers(raw) {
		t.Error("an entry that does not parse is covered")
	}
	if !dom([]string{"*.test", "a.test"}, nil, false).Covers(dom([]string{"a.test"}, nil, false)) {
		t.Error("a valid entry is not covered")
	}
}
