package host

import (
	"strings"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "empty", limit: 8, want: ""},
		{name: "fits", limit: 8, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "exactly the limit", limit: 8, writes: []string{"abcdefgh"}, want: "abcdefgh"},
		{name: "middle dropped", limit: 8, writes: []string{"abcdefghij"},
			want: "abcd\n[... sbx: 2 bytes truncated ...]\nghij", wantTruncated: true},
		{name: "tail ring wraps", limit: 8, writes: []string{"abcd", "efgh", "ij", "k"},
			want: "abcd\n[... sbx: 3 bytes truncated ...]\nhijk", wantTruncated: true},
		{name: "one write replaces the tail", limit: 8, writes: []string{"abcdef", strings.Repeat("x", 10) + "WXYZ"},
			want: "abcd\n[... sbx: 12 bytes truncated ...]\nWXYZ", wantTruncated: true},
		{name: "odd limit: the head gets the extra byte", limit: 5, writes: []string{"abcdefg"},
			want: "abc\n[... sbx: 2 bytes truncated ...]\nfg", wantTruncated: true},
		{name: "limit below 2 is 2", limit: 0, writes: []string{"abc"},
			want: "a\n[... sbx: 1 bytes truncated ...]\nc", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewCappedBuffer(tt.limit)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := b.Truncated(); got != tt.wantTruncated {
				t.Errorf("Truncated() = %v, want %v", got, tt.wantTruncated)
			}
		})
	}
}
