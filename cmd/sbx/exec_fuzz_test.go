package main

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/jsonfuzz"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// FuzzExecRequest: a request sbx exec decodes is exact JSON: no duplicate
// key, no case variant folded onto a field, and it re-decodes the same.
func FuzzExecRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":["/bin/true"],"cwd":"/tmp","SANDBOX_MODE":"danger-full-access"}`,
		`{"command":["/bin/true"],"cwd":"/tmp","sandbox_mode":"read-only","sandbox_mode":"danger-full-access"}`,
		`{"command":["/bin/true"],"cwd":"/tmp","env":{"X":"1","X":"2"}}`,
		`{"command":["/bin/true"],"cwd":"/tmp","additional_permissions":{"network":{}}}`,
		`{"command":["/bin/true"],"cwd":"/tmp","grants":{"turn":{"network":{"enabled":false,"enabled":true}}}}`,
		`{"shell":{"kind":"sh","SCRIPT":"x"},"cwd":"/tmp"}`,
		`{"fs":{"op":"write","path":"a","content":"x"},"cwd":"/tmp","limits":{"memory_bytes":1048576,"pids":3,"cpus":0.5}}`,
		`[{"command":["/bin/true"],"cwd":"/tmp"}]`,
		`{"command":["make"],"cwd":"/w","sandbox_mode":"workspace-write","sandbox_permissions":"require_escalated","escalate_to":"danger-full-access","justification":"j","approval_policy":"on-request","pty":{"rows":3},"stdin":"x","env_policy":{"mode":"clean","allow":["GO*"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req execRequest
		if strictjson.Decode(data, &req) == nil {
			jsonfuzz.Accepted(t, data, &req, strictjson.Decode)
		}
	})
}

// FuzzRunLimitFlags: --memory, --timeout and --cpus of sbx run either are
// refused or give limits the backends can apply: a timeout that is not
// negative, a memory limit of 0 only for a zero size, and a CPU quota that
// Validate accepts.
func FuzzRunLimitFlags(f *testing.F) {
	for _, s := range [][3]string{
		{"64M", "30s", "0.5"}, {"0.5", "-1s", "NaN"}, {"1e-300", "1h", "Inf"}, {"8E", "9223372036s", "1e300"},
		{"0", "0", "0"}, {"1.5G", "1.5h", "0.001"}, {"-0", "-0s", "-0"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, memory, timeout, cpus string) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var rf runFlags
		rf.register(fs)
		if fs.Parse([]string{"--memory=" + memory, "--timeout=" + timeout, "--cpus=" + cpus}) != nil {
			return
		}
		r, err := rf.request([]string{"/bin/true"}, map[string]bool{"memory": true, "timeout": true, "cpus": true})
		if err != nil || r.Limits.Validate() != nil {
			return
		}
		if r.Timeout < 0 {
			t.Fatalf("--timeout=%q accepted as %s", timeout, r.Timeout)
		}
		if r.Limits.MemoryBytes == 0 {
			if v, err := strconv.ParseFloat(strings.TrimRight(strings.ToUpper(strings.TrimSpace(memory)), "KMGTIB"), 64); err != nil || v != 0 {
				t.Fatalf("--memory=%q accepted as 0, which means no limit", memory)
			}
		}
		if c := r.Limits.CPUs; c != 0 && (c < 0.01 || int64(c*100000) <= 0) {
			t.Fatalf("--cpus=%q accepted as %g", cpus, c)
		}
	})
}
