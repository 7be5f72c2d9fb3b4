//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scrapeScript scrapes an sbx serve --metrics endpoint (a unix socket, or
// host:port with a bearer token) and parses the answer with the Python
// Prometheus client's text parser (Debian's python3-prometheus-client): a
// real parser of the format, not the test's own reading of it. Its
// arguments: the address, the token or "-", and "raw" to print the answer
// as it came (or why the connect failed) rather than parse it.
const scrapeScript = `
import json, socket, sys
addr, token = sys.argv[1], sys.argv[2]
try:
    if "/" in addr:
        s = socket.socket(socket.AF_UNIX)
        s.connect(addr)
        host = "localhost"
    else:
        h, p = addr.rsplit(":", 1)
        s = socket.create_connection((h.strip("[]"), int(p)))
        host = addr
    req = "GET /metrics HTTP/1.1\r\nHost: %s\r\n" % host
    if token != "-":
        req += "Authorization: Bearer %s\r\n" % token
    s.sendall((req + "Connection: close\r\n\r\n").encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError as e:
    if sys.argv[3:] != ["raw"]:
        raise
    print("connect failed:", e)
    sys.exit(0)
if sys.argv[3:] == ["raw"]:
    print(data.decode(errors="replace"))
    sys.exit(0)
from prometheus_client.parser import text_string_to_metric_families
head, _, body = data.partition(b"\r\n\r\n")
lines = head.decode().split("\r\n")
out = {"status": int(lines[0].split(" ")[1]), "headers": lines[1:], "samples": []}
if out["status"] == 200:
    for fam in text_string_to_metric_families(body.decode()):
        for smp in fam.samples:
            out["samples"].append({"name": smp.name, "labels": smp.labels, "value": smp.value})
else:
    out["body"] = body.decode()
print(json.dumps(out))
`

type scrape struct {
	Status  int      `json:"status"`
	Headers []string `json:"headers"`
	Body    string   `json:"body"`
	Samples []struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
		Value  float64           `json:"value"`
	} `json:"samples"`
}

// sum adds the samples of name whose labels include match.
func (s scrape) sum(name string, match map[string]string) float64 {
	total := 0.0
next:
	for _, smp := range s.Samples {
		if smp.Name != name {
			continue
		}
		for k, v := range match {
			if smp.Labels[k] != v {
				continue next
			}
		}
		total += smp.Value
	}
	return total
}

// by sums the samples of name per value of label.
func (s scrape) by(name, label string) map[string]float64 {
	m := map[string]float64{}
	for _, smp := range s.Samples {
		if smp.Name == name {
			m[smp.Labels[label]] += smp.Value
		}
	}
	return m
}

// needScraper skips where python3 is absent by design (the container and
// VM guests list it in SBX_IT_ABSENT_TOOLS) and fails elsewhere: the scrape
// and the in-call scrape run Debian's /usr/bin/python3.
func needScraper(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		needTool(t, "python3")
		t.Fatalf("/usr/bin/python3 (Debian's, with python3-prometheus-client) is required: %v", err)
	}
}

func scrapeMetrics(t *testing.T, addr string, token ...string) scrape {
	t.Helper()
	script := filepath.Join(t.TempDir(), "scrape.py")
	if err := os.WriteFile(script, []byte(scrapeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// Debian's python3, whose dist-packages hold python3-prometheus-client
	// (not a python3 of pyenv's or a venv's earlier on PATH).
	tok := "-"
	if len(token) > 0 {
		tok = token[0]
	}
	out, err := exec.Command("/usr/bin/python3", script, addr, tok).CombinedOutput()
	if err != nil {
		// python3-prometheus-client is in .ci/run's apt line: its absence
		// is a broken test machine, not a kernel without a feature.
		t.Fatalf("scrape %s: %v\n%s", addr, err, out)
	}
	var s scrape
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("scrape %s: %v\n%s", addr, err, out)
	}
	return s
}

// metricsDir is a directory of the metrics socket's own (0700).
func metricsDir(t *testing.T) string {
	t.Helper()
	needScraper(t)
	d, err := os.MkdirTemp("", "sbx-metrics-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestServeMetrics: issue 33 §3. The counts sbx serve --metrics exposes,
// read by a real Prometheus text parser, match the calls the test made:
// calls by outcome, denials by operation equal to the reports' denials
// summed, retries offered, the refused approval by outcome and answerer,
// the latency histograms' counts, sessions open, the journal's fsyncs.
func TestServeMetrics(t *testing.T) {
	sock := filepath.Join(metricsDir(t), "metrics.sock")
	s := startServer(t, "--metrics", sock)
	s.ok("initialize", nil)
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	out := outsidePath(t)
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o777)
	if err := os.WriteFile(filepath.Join(out, "existing"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(out, "existing"), 0o666)
	before := scrapeMetrics(t, sock)
	if before.Status != 200 || !strings.Contains(strings.Join(before.Headers, "\n"), "text/plain; version=0.0.4") {
		t.Fatalf("scrape: %+v", before)
	}
	if got := before.sum("sbx_sessions_open", nil); got != 1 {
		t.Errorf("sbx_sessions_open = %v, want 1", got)
	}

	denials, downgrades := map[string]float64{}, map[string]float64{}
	retries, results := 0.0, 0.0
	for i, cmd := range []string{
		"true",
		"echo in > inside.txt",
		"echo out > " + out + "/a",
		"echo out > " + out + "/b; cat " + out + "/b",
		"echo more >> " + out + "/existing; rm -f " + out + "/existing",
		"exit 3",
	} {
		res := s.ok("exec", execParams("s", turn, fmt.Sprintf("c%d", i), ws, "sh", "-c", cmd))
		results++
		ds, _ := res["denials"].([]any)
		for _, d := range ds {
			denials[d.(map[string]any)["operation"].(string)]++
		}
		if res["retry"] != nil {
			retries++
		}
		dg, _ := res["degraded"].([]any)
		for _, d := range dg {
			downgrades[d.(map[string]any)["feature"].(string)]++
		}
	}
	if len(denials) == 0 {
		t.Fatalf("the writes outside the workspace reported no denial")
	}
	esc := execParams("s", turn, "refused", ws, "true")
	esc["sandbox_permissions"], esc["escalate_to"], esc["justification"] = "require_escalated", "danger-full-access", "x"
	if code, kind, d := s.fail("exec", esc); code != -32004 || kind != "denied" || d["outcome"] != "unavailable" {
		t.Fatalf("approval with no answerer: %d %s %v", code, kind, d)
	}

	m := scrapeMetrics(t, sock)
	if got := m.sum("sbx_calls_total", nil); got != results+1 {
		t.Errorf("sbx_calls_total = %v, want %v", got, results+1)
	}
	if got := m.sum("sbx_calls_total", map[string]string{"mode": "workspace-write", "outcome": "exited"}); got != results {
		t.Errorf("sbx_calls_total{exited} = %v, want %v: %v", got, results, m.by("sbx_calls_total", "outcome"))
	}
	if got := m.sum("sbx_calls_total", map[string]string{"outcome": "denied"}); got != 1 {
		t.Errorf("sbx_calls_total{denied} = %v, want 1", got)
	}
	if got := m.by("sbx_denials_total", "operation"); fmt.Sprint(got) != fmt.Sprint(denials) {
		t.Errorf("sbx_denials_total by operation = %v, the reports' denials summed = %v", got, denials)
	}
	if got := m.by("sbx_downgrades_total", "feature"); fmt.Sprint(got) != fmt.Sprint(downgrades) {
		t.Errorf("sbx_downgrades_total by feature = %v, the reports' degraded summed = %v", got, downgrades)
	}
	t.Logf("denials by operation %v, downgrades by feature %v, retries %v", denials, downgrades, retries)
	if got := m.sum("sbx_retries_offered_total", nil); got != retries {
		t.Errorf("sbx_retries_offered_total = %v, the reports' retries = %v", got, retries)
	}
	if got := m.sum("sbx_approvals_total", map[string]string{"outcome": "unavailable", "answerer": "none"}); got != 1 {
		t.Errorf("sbx_approvals_total{unavailable,none} = %v, want 1: %+v", got, m.by("sbx_approvals_total", "answerer"))
	}
	if got := m.sum("sbx_launch_seconds_count", nil); got != results {
		t.Errorf("sbx_launch_seconds_count = %v, want %v (the dispatched calls)", got, results)
	}
	if got := m.sum("sbx_call_seconds_count", nil); got != results+1 {
		t.Errorf("sbx_call_seconds_count = %v, want %v", got, results+1)
	}
	if got := m.sum("sbx_call_seconds_bucket", map[string]string{"le": "+Inf"}); got != results+1 {
		t.Errorf("sbx_call_seconds_bucket{le=+Inf} = %v, want %v", got, results+1)
	}
	if got := m.sum("sbx_calls_in_flight", nil); got != 0 {
		t.Errorf("sbx_calls_in_flight = %v after every call returned", got)
	}
	if got := m.sum("sbx_journal_fsync_seconds_count", nil); got < 1 {
		t.Errorf("sbx_journal_fsync_seconds_count = %v: the session's log was fsynced", got)
	}
	s.ok("session/close", map[string]any{"session_id": "s"})
	if got := scrapeMetrics(t, sock).sum("sbx_sessions_open", nil); got != 0 {
		t.Errorf("sbx_sessions_open after session/close = %v, want 0", got)
	}
}

// TestServeMetricsRefusesCalls: the metrics are sbx's control plane too
// (they tell what every session's calls were denied): a sandboxed call
// that connects to the --metrics socket is refused as one that connects
// to --listen's is (or its connect is refused before), and gets no
// series; the scrapes of the server's own user keep working.
func TestServeMetricsRefusesCalls(t *testing.T) {
	sock := filepath.Join(metricsDir(t), "metrics.sock")
	s := startServer(t, "--metrics", sock)
	s.ok("initialize", nil)
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	// The scrape in the call, without the parser: a refusal is not
	// Prometheus text, and a sandbox may not see dist-packages.
	res := s.ok("exec", execParams("s", turn, "c1", ws, "/usr/bin/python3", "-c", scrapeScript, sock, "-", "raw"))
	stdout, _ := res["stdout"].(string)
	t.Logf("the call's scrape: %q", stdout)
	if strings.Contains(stdout, "sbx_calls_total") {
		var degraded []string
		ds, _ := res["degraded"].([]any)
		for _, d := range ds {
			degraded = append(degraded, fmt.Sprint(d.(map[string]any)["feature"]))
		}
		if strings.Contains(strings.Join(degraded, " "), "pidns") {
			// IMPORTANT (docs/security.md, gaps): without a PID namespace
			// a call that connects itself has no mark (as for --listen).
			t.Logf("no PID namespace (%v): a direct connect is not recognised", degraded)
		} else {
			t.Errorf("a sandboxed call read the metrics: %q", stdout)
		}
	} else if !strings.Contains(stdout, "403") || !strings.Contains(stdout, "connection refused: a sandboxed call never reaches an sbx server") {
		// Where sbx's supervisor carries out the connect, it may refuse it
		// itself: then the report has the denial.
		if ds, _ := res["denials"].([]any); !strings.Contains(stdout, "connect failed") || !strings.Contains(fmt.Sprint(ds), sock) {
			t.Errorf("the call's scrape was neither refused by the server nor denied: %q %v", stdout, ds)
		}
	}
	// The socket's directory is read-only in every call (in /tmp here,
	// which a workspace-write call may write): a call cannot replace the
	// socket with its own and feed the scraper its numbers.
	res = s.ok("exec", execParams("s", turn, "c2", ws, "sh", "-c", "rm -f "+sock+"; touch "+filepath.Dir(sock)+"/planted"))
	if _, err := os.Stat(filepath.Join(filepath.Dir(sock), "planted")); err == nil {
		t.Errorf("a call wrote in the metrics socket's directory: %v", res)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("a call removed the metrics socket: %v %v", err, res)
	}
	if m := scrapeMetrics(t, sock); m.Status != 200 || m.sum("sbx_calls_total", nil) != 2 {
		t.Errorf("the server's user's scrape after the call's: %d, sbx_calls_total %v", m.Status, m.sum("sbx_calls_total", nil))
	}
	if strings.Contains(stdout, "403") && !stderrHas(s, "metrics: refused a connection: a sandboxed call never reaches an sbx server") {
		t.Errorf("the refusal was not logged: %s", s.stderr.String())
	}
}

// TestServeMetricsTCP: on loopback every scrape carries the token of the
// state directory's metrics-token (which no call can read): without it,
// or with another, the scrape is refused; with it the series parse.
func TestServeMetricsTCP(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) { testServeMetricsTCP(t, durable) })
	}
}

// testServeMetricsTCP: with a state directory the token is its
// metrics-token; with --ephemeral, that of a private directory made for it
// (masked as the state directory is).
func testServeMetricsTCP(t *testing.T, durable bool) {
	needScraper(t)
	state := t.TempDir()
	args := []string{"--state-dir", state, "--metrics", "127.0.0.1:0"}
	if !durable {
		args = []string{"--ephemeral", "--metrics", "127.0.0.1:0"}
	}
	s := startServer(t, args...)
	s.ok("initialize", nil)
	var addr, tokenFile string
	// stderr reaches the buffer through a pipe: the line may come later.
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if _, rest, ok := strings.Cut(line, "metrics at http://"); ok {
				addr, rest, _ = strings.Cut(rest, "/")
				_, tokenFile, _ = strings.Cut(rest, "its bearer token is in ")
				tokenFile = strings.TrimSuffix(tokenFile, ")")
			}
		}
	}
	if addr == "" {
		t.Fatalf("no metrics address on stderr: %s", s.stderr.String())
	}
	if durable && tokenFile != filepath.Join(state, "metrics-token") {
		t.Errorf("the token is in %q, want the state directory's metrics-token", tokenFile)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("metrics-token: %v %v, want mode 0600", fi.Mode(), err)
	}
	if m := scrapeMetrics(t, addr); m.Status != 403 || !strings.Contains(m.Body, "no_token") {
		t.Errorf("a scrape without the token: %d %s", m.Status, m.Body)
	}
	if m := scrapeMetrics(t, addr, strings.Repeat("0", len(token))); m.Status != 403 || !strings.Contains(m.Body, "wrong_token") {
		t.Errorf("a scrape with another token: %d %s", m.Status, m.Body)
	}
	if m := scrapeMetrics(t, addr, token); m.Status != 200 || len(m.Samples) == 0 {
		t.Errorf("a scrape with the token: %+v", m)
	}
	// A call with the host's network can reach the port, not the token.
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	p := execParams("s", turn, "c1", ws, "cat", tokenFile)
	res := s.ok("exec", p)
	if out, _ := res["stdout"].(string); res["exit_code"] == 0.0 || strings.Contains(out, token) {
		t.Errorf("a call read the metrics token: %v", res)
	}
}

// stderrHas waits up to 10 s for want in the server's stderr, which reaches
// its buffer through a pipe.
func stderrHas(s *server, want string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.stderr.String(), want) {
			return true
		}
	}
	return false
}
