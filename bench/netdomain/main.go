// Command netdomain measures network by domain end to end, with the real
// sbx binary and curl: the throughput of a large download from an origin
// on the host's loopback through sbx's proxy (plain HTTP forwarded, and
// HTTPS through a CONNECT tunnel) against the same download with
// --network, and the time of a small request on a new connection each
// (what the proxy adds to a connection's set-up). Not a test: numbers.
//
//	go build -o /tmp/sbx ./cmd/sbx && go run ./bench/netdomain -sbx /tmp/sbx
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
	"slices"
	"strconv"
	"strings"
)

func main() {
	sbxBin := flag.String("sbx", "sbx", "the sbx binary")
	size := flag.Int("mb", 200, "download size in MB")
	runs := flag.Int("runs", 3, "downloads per mode (the best is shown)")
	conns := flag.Int("conns", 50, "small requests, each on a new connection")
	flag.Parse()
	buf := make([]byte, 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			w.Write([]byte("ok\n"))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(*size<<20))
		for range *size {
			w.Write(buf)
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
	network := []string{"--network"}
	domains := []string{"--allow-domain", "origin.test:" + pp, "--allow-domain", "origin.test:" + tp,
		"--resolve", "origin.test:" + pp + ":127.0.0.1", "--resolve", "origin.test:" + tp + ":127.0.0.1", "--allow-private-addresses"}

	speed := func(flags []string, url string) float64 {
		best := 0.0
		for range *runs {
			out := sbx(*sbxBin, flags, "curl", "-ksS", "-o", "/dev/null", "-w", "%{speed_download}", url)
			v, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
			best = max(best, v/1e6)
		}
		return best
	}
	fmt.Printf("download of %d MB from loopback, best of %d (MB/s):\n", *size, *runs)
	for _, c := range []struct{ name, direct, proxied string }{
		{"http", "http://127.0.0.1:" + pp + "/big", "http://origin.test:" + pp + "/big"},
		{"https", "https://127.0.0.1:" + tp + "/big", "https://origin.test:" + tp + "/big"},
	} {
		d, p := speed(network, c.direct), speed(domains, c.proxied)
		fmt.Printf("  %-5s --network %8.0f   proxy %8.0f   (%.0f%%)\n", c.name, d, p, 100*p/d)
	}
	perConn := func(flags []string, url string) float64 {
		args := []string{"curl", "-ksS", "-H", "Connection: close", "-o", "/dev/null", "-w", "%{time_total}\n"}
		for range *conns {
			args = append(args, url)
		}
		var ts []float64
		for _, l := range strings.Fields(sbx(*sbxBin, flags, args...)) {
			v, _ := strconv.ParseFloat(l, 64)
			ts = append(ts, v*1e3)
		}
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	fmt.Printf("a small request on a new connection, median of %d (ms):\n", *conns)
	for _, c := range []struct{ name, direct, proxied string }{
		{"http", "http://127.0.0.1:" + pp + "/", "http://origin.test:" + pp + "/"},
		{"https", "https://127.0.0.1:" + tp + "/", "https://origin.test:" + tp + "/"},
	} {
		d, p := perConn(network, c.direct), perConn(domains, c.proxied)
		fmt.Printf("  %-5s --network %6.3f   proxy %6.3f   (+%.3f)\n", c.name, d, p, p-d)
	}
}

func sbx(bin string, flags []string, cmd ...string) string {
	args := append(append(append([]string{"run"}, flags...), "--"), cmd...)
	c := exec.Command(bin, args...)
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		log.Fatalf("sbx %q: %v", args, err)
	}
	return string(out)
}
