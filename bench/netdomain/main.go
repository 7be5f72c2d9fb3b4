// Command netdomain measures network by domain end to end, with the real
// sbx binary and curl: the throughput of a large download from an origin
// on the host's loopback through sbx's proxy (plain HTTP forwarded, and
// HTTPS through a CONNECT tunnel) against the same download with
// --network, and the time of a small request on a new connection each
// (what the proxy adds to a connection's set-up). With -srt, the same
// through sandbox-runtime's proxy (bubblewrap, socat and a Node proxy on the
// host). Not a test: numbers.
//
//	go build -o /tmp/sbx ./cmd/sbx && go run ./bench/netdomain -sbx /tmp/sbx
//	go run ./bench/netdomain -sbx /tmp/sbx -srt node_modules/.bin/srt
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	sbxBin := flag.String("sbx", "sbx", "the sbx binary")
	srtBin := flag.String("srt", "", "sandbox-runtime's srt (npm @anthropic-ai/sandbox-runtime), to measure its proxy beside sbx's; it needs bwrap, socat and rg")
	size := flag.Int("mb", 200, "download size in MB")
	runs := flag.Int("runs", 3, "downloads per mode (the best is shown)")
	conns := flag.Int("conns", 50, "small requests, each on a new connection")
	rate := flag.Float64("rate", 0, "pace the origin's download at `MB/s` (0: as fast as loopback goes), as a network link would")
	flag.Parse()
	buf := make([]byte, 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			w.Write([]byte("ok\n"))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(*size<<20))
		start := time.Now()
		for i := range *size {
			w.Write(buf)
			if *rate > 0 {
				// The (i+1)th MiB is not sent before a link of rate
				// MB/s would have carried it.
				time.Sleep(time.Until(start.Add(time.Duration(float64(i+1) * (1 << 20) / (*rate * 1e6) * float64(time.Second)))))
			}
		}
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsSrv := httptest.NewUnstartedServer(h)
	tlsSrv.TLS = &tls.Config{}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	pp := strconv.Itoa(plain.Listener.Addr().(*net.TCPAddr).Port)
	tp := strconv.Itoa(tlsSrv.Listener.Addr().(*net.TCPAddr).Port)

	// Each way in: the argv before the command, and how it names the origin.
	type way struct {
		name, host string
		argv       []string
		curl       []string // extra curl flags
	}
	direct := way{"--network", "127.0.0.1", []string{*sbxBin, "run", "--network", "--"}, nil}
	ways := []way{direct, {"sbx proxy", "origin.test", []string{*sbxBin, "run",
		"--allow-domain", "origin.test:" + pp, "--allow-domain", "origin.test:" + tp,
		"--resolve", "origin.test:" + pp + ":127.0.0.1", "--resolve", "origin.test:" + tp + ":127.0.0.1",
		"--allow-private-addresses", "--"}, nil}}
	if *srtBin != "" {
		// srt allows an IP literal named with its port; its NO_PROXY
		// exempts loopback, so curl is told to use the proxy regardless.
		dir, err := os.MkdirTemp("", "netdomain-srt-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		settings := filepath.Join(dir, "srt-settings.json")
		conf := fmt.Sprintf(`{"network": {"allowedDomains": ["127.0.0.1:%s", "127.0.0.1:%s"], "deniedDomains": []}, "filesystem": {"denyRead": [], "allowWrite": [%q], "denyWrite": []}}`, pp, tp, dir)
		if err := os.WriteFile(settings, []byte(conf), 0o600); err != nil {
			log.Fatal(err)
		}
		ways = append(ways, way{"srt proxy", "127.0.0.1", []string{*srtBin, "--settings", settings, "--"}, []string{"--noproxy", ""}})
	}
	url := func(w way, scheme, port, path string) string { return scheme + "://" + w.host + ":" + port + path }

	speed := func(w way, scheme, port string) float64 {
		best := 0.0
		for range *runs {
			out := run(w.argv, append(append([]string{"curl", "-ksS", "-o", "/dev/null", "-w", "%{speed_download}"}, w.curl...), url(w, scheme, port, "/big"))...)
			v, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
			best = max(best, v/1e6)
		}
		return best
	}
	perConn := func(w way, scheme, port string) float64 {
		args := append([]string{"curl", "-ksS", "-H", "Connection: close", "-o", "/dev/null", "-w", "%{time_total}\n"}, w.curl...)
		for range *conns {
			args = append(args, url(w, scheme, port, "/"))
		}
		var ts []float64
		for _, l := range strings.Fields(run(w.argv, args...)) {
			v, _ := strconv.ParseFloat(l, 64)
			ts = append(ts, v*1e3)
		}
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	schemes := []struct{ name, port string }{{"http", pp}, {"https", tp}}
	paced := "as fast as loopback goes"
	if *rate > 0 {
		paced = fmt.Sprintf("the origin paced at %.0f MB/s", *rate)
	}
	fmt.Printf("download of %d MB from loopback, %s, best of %d (MB/s; %% of --network):\n", *size, paced, *runs)
	for _, sc := range schemes {
		d := speed(direct, sc.name, sc.port)
		fmt.Printf("  %-5s %s %8.0f", sc.name, direct.name, d)
		for _, w := range ways[1:] {
			p := speed(w, sc.name, sc.port)
			fmt.Printf("   %s %8.0f (%.0f%%)", w.name, p, 100*p/d)
		}
		fmt.Println()
	}
	fmt.Printf("a small request on a new connection, median of %d (ms; + over --network):\n", *conns)
	for _, sc := range schemes {
		d := perConn(direct, sc.name, sc.port)
		fmt.Printf("  %-5s %s %6.3f", sc.name, direct.name, d)
		for _, w := range ways[1:] {
			p := perConn(w, sc.name, sc.port)
			fmt.Printf("   %s %6.3f (+%.3f)", w.name, p, p-d)
		}
		fmt.Println()
	}
}

// run runs cmd under the launcher argv and returns its stdout.
func run(argv []string, cmd ...string) string {
	args := append(append([]string{}, argv[1:]...), cmd...)
	c := exec.Command(argv[0], args...)
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		log.Fatalf("%s %q: %v", argv[0], args, err)
	}
	return string(out)
}
