package report

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
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
		{"0", 0, false},
		{"0.5", 0, true},    // would be 0 bytes: no limit
		{"1e-300", 0, true}, // the same
		{"0.5K", 512, false},
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
		{Limits{CPUs: 1e9}, "cpus"},
		{Limits{CPUs: MaxCPUs() + 0.5}, "cpus"},
		{Limits{CPUs: MaxCPUs()}, ""},
		{Limits{Pids: MaxPids}, ""},
		{Limits{Pids: MaxPids + 1}, "pids"},
	} {
		err := c.l.Validate()
		if c.field == "" && err != nil || c.field != "" && (err == nil || !strings.HasPrefix(err.Error(), c.field+":")) {
			t.Errorf("%+v.Validate() = %v, want error naming %q", c.l, err, c.field)
		}
	}
}

// TestLimitsRequest: a limit given must be one (0 is refused, with how to
// ask for none), and the range check is the one Validate makes, with the
// caller's names.
func TestLimitsRequest(t *testing.T) {
	names := LimitNames{MemoryBytes: "--memory", Pids: "--pids", CPUs: "--cpus", Omit: "leave the flag out"}
	for _, c := range []struct {
		r    LimitsRequest
		want Limits
		err  string // "" when valid
	}{
		{LimitsRequest{}, Limits{}, ""},
		{LimitsRequest{MemoryBytes: new(int64(64 << 20)), Pids: new(10), CPUs: new(0.5)}, Limits{MemoryBytes: 64 << 20, Pids: 10, CPUs: 0.5}, ""},
		{LimitsRequest{MemoryBytes: new(int64(0))}, Limits{}, "--memory: must be greater than 0; leave the flag out for no limit"},
		{LimitsRequest{Pids: new(0)}, Limits{}, "--pids: must be greater than 0; leave the flag out for no limit"},
		{LimitsRequest{CPUs: new(0.0)}, Limits{}, "--cpus: must be greater than 0; leave the flag out for no limit"},
		{LimitsRequest{CPUs: new(1e9)}, Limits{}, "--cpus: 1e+09 is out of range: give a number of cores from 0.01 to"},
		{LimitsRequest{Pids: new(-1)}, Limits{}, "--pids: must not be negative"},
		{LimitsRequest{MemoryBytes: new(int64(100))}, Limits{}, "--memory: 100 is below 1 MiB"},
	} {
		got, err := c.r.Limits(names)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%+v.Limits() = %+v, %v; want %+v", c.r, got, err, c.want)
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("%+v.Limits() error %v, want %q...", c.r, err, c.err)
		}
	}
	if _, err := (LimitsRequest{Pids: new(0)}).Limits(JSONLimitNames); err == nil || err.Error() != "limits.pids: must be greater than 0; leave the field out for no limit" {
		t.Errorf("JSON names: %v", err)
	}
}

func TestCheckTimeout(t *testing.T) {
	for _, c := range []struct {
		d   time.Duration
		err bool
	}{{time.Nanosecond, false}, {MaxTimeout, false}, {0, true}, {-time.Second, true}, {MaxTimeout + 1, true}} {
		if err := CheckTimeout("--timeout", c.d); (err != nil) != c.err {
			t.Errorf("CheckTimeout(%v) = %v, want error %t", c.d, err, c.err)
		}
	}
}

// FuzzParseSize: a size parses to a non-negative byte count or fails, never
// panics; a size that is not zero never becomes 0 (which means "no limit"),
// and the byte count, written out, parses back to itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64M", "1.5G", "0", "0.5", "0.0001K", "1e-300", "9223372036854775807", "8E", "1e30G", "NaN", "-0", " 2t ", "0x1p4", "1_000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if zero, _ := ParseSize("0"); n == zero && !isZeroSize(s) {
			t.Fatalf("ParseSize(%q) = 0, which means no limit", s)
		}
		if back, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, which parses back as %d, %v", s, n, back, err)
		}
	})
}

// isZeroSize reports whether s, without its suffix, is a zero number.
func isZeroSize(s string) bool {
	t := strings.TrimRight(strings.ToUpper(strings.TrimSpace(s)), "KMGTIB")
	v, err := strconv.ParseFloat(t, 64)
	return err == nil && v == 0
}

// FuzzLimitsValidate: limits that Validate accepts are ones the kernel can
// be given: a CPU quota (cores times the CFS period in µs, as the cgroup
// backend writes it) is a positive int64.
func FuzzLimitsValidate(f *testing.F) {
	for _, c := range []float64{0, 0.01, 0.5, 4, 1e300, 1e14, -1, 0.001} {
		f.Add(int64(64<<20), 10, c)
	}
	f.Fuzz(func(t *testing.T, mem int64, pids int, cpus float64) {
		l := Limits{MemoryBytes: mem, Pids: pids, CPUs: cpus}
		if l.Validate() != nil {
			return
		}
		if mem < 0 || pids < 0 || cpus < 0 {
			t.Fatalf("%+v accepted", l)
		}
		const period = 100000
		if q := cpus * period; cpus > 0 && (q < 1 || q >= math.MaxInt64 || int64(q) <= 0) {
			t.Fatalf("cpus %g accepted, but its quota %g µs is not a positive int64", cpus, q)
		}
	})
}
