package profiles

import (
	"strings"
	"testing"
)

// TestDecodeNormalizeRequestAs: the grant key is the caller's choice, not a
// tolerance: under each key the other is an unknown field, and errors and
// ignored fields are named under the chosen one.
func TestDecodeNormalizeRequestAs(t *testing.T) {
	const codex = `{"cwd": "/x", "requested": {"network": {"enabled": true}}, "permissions": {"network": {"enabled": true}, "macos": {}}, "scope": "turn", "strict_auto_review": false}`
	req, err := DecodeNormalizeRequestAs([]byte(codex), GrantKeyPermissions)
	if err != nil || !req.Granted.NetworkEnabled() || len(req.Ignored) != 1 || req.Ignored[0] != "permissions.macos" {
		t.Fatalf("Codex's shape: %+v, %v", req, err)
	}
	if _, err := DecodeNormalizeRequest([]byte(codex)); err == nil || !strings.HasPrefix(err.Error(), "permissions: unknown field") {
		t.Errorf("permissions under the default key: %v", err)
	}
	sbx := strings.Replace(codex, `"permissions"`, `"granted"`, 1)
	if _, err := DecodeNormalizeRequestAs([]byte(sbx), GrantKeyPermissions); err == nil || !strings.HasPrefix(err.Error(), "granted: unknown field") {
		t.Errorf("granted under the permissions key: %v", err)
	}
	bad := strings.Replace(codex, `"enabled": true}, "macos"`, `"enabled": true, "enabled": false}, "macos"`, 1)
	if _, err := DecodeNormalizeRequestAs([]byte(bad), GrantKeyPermissions); err == nil || !strings.HasPrefix(err.Error(), "permissions.network.enabled: duplicate key") {
		t.Errorf("duplicate under permissions: %v", err)
	}
	if _, err := DecodeNormalizeRequestAs([]byte(codex), GrantKey(7)); err == nil {
		t.Error("an invalid grant key decoded")
	}
}
