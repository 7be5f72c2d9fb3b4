package enforce

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"67108864", 67108864, false},
		{"64M", 64 << 20, false},
		{"64m", 64 << 20, false},
		{"64MiB", 64 << 20, false},
		{"64MB", 64 << 20, false},
		{"1.5G", 3 << 29, false},
		{"2T", 2 << 40, false},
		{"512K", 512 << 10, false},
		{"", 0, true},
		{"M", 0, true},
		{"-1M", 0, true},
		{"12Q", 0, true},
		{"1e30G", 0, true},
		{"NaN", 0, true},
	} {
		got, err := ParseSize(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %t", c.in, got, err, c.want, c.err)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		l     Limits
		field string // "" when valid
	}{
		{Limits{}, ""},
		{Limits{MemoryBytes: 1 << 20, Pids: 1, CPUs: 0.01}, ""},
		{Limits{MemoryBytes: -1}, "memory_bytes"},
		{Limits{MemoryBytes: 100}, "memory_bytes"},
		{Limits{Pids: -3}, "pids"},
		{Limits{CPUs: -1}, "cpus"},
		{Limits{CPUs: 0.001}, "cpus"},
	} {
		err := c.l.Validate()
		if c.field == "" && err != nil || c.field != "" && (err == nil || !strings.HasPrefix(err.Error(), c.field+":")) {
			t.Errorf("%+v.Validate() = %v, want error naming %q", c.l, err, c.field)
		}
	}
}
