package windows

import (
	"slices"
	"strings"
	"testing"
)

func TestEnvBlock(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []uint16
	}{
		{"empty: two NULs", nil, []uint16{0, 0}},
		{"one", []string{"A=1"}, []uint16{'A', '=', '1', 0, 0}},
		{"two, non-ASCII as UTF-16", []string{"A=é", "B=😀"}, []uint16{'A', '=', 0xe9, 0, 'B', '=', 0xd83d, 0xde00, 0, 0}},
	}
	for _, tc := range tests {
		got, err := envBlock(tc.env)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: envBlock(%q) = %x, %v; want %x", tc.name, tc.env, got, err, tc.want)
		}
	}
	if _, err := envBlock([]string{"OK=1", "BAD=a\x00HIDDEN=1"}); err == nil || !strings.Contains(err.Error(), "BAD") {
		t.Errorf("NUL in a value: err = %v, want one naming BAD", err)
	}
}
