package netproxy

import (
	"sort"
	"strings"
	"sync"
)

// EnvVars returns the environment, as KEY=VALUE, that points common clients
// at the proxy: httpAddr serves HTTP (CONNECT and plain), socksAddr SOCKS5
// (both may be the same address: a Server sniffs the protocol). Either may
// be empty to leave its variables out. docs/network.md lists which client
// reads which variable:
//
//   - HTTP_PROXY/http_proxy, HTTPS_PROXY/https_proxy: curl, wget, git
//     (libcurl), pip (requests), Go's net/http, apt, cargo, Python's urllib.
//     Both cases because libcurl reads only lower-case http_proxy (httpoxy)
//     while others read only upper case.
//   - ALL_PROXY/all_proxy as socks5h:// (the h: the proxy resolves names,
//     so the name is what is checked): curl for schemes without a variable
//     of their own.
//   - NO_PROXY/no_proxy: the sandbox's own loopback, which is not the
//     host's and must not go through the proxy.
//   - npm_config_proxy, npm_config_https_proxy: npm and yarn v1 read their
//     config from these (npm also falls back to HTTPS_PROXY).
//   - NODE_USE_ENV_PROXY=1: Node.js 24 and later (and 22.21) make fetch()
//     and https honour HTTP(S)_PROXY only when it is set.
func EnvVars(httpAddr, socksAddr string) []string {
	var env []string
	set := func(k, v string) { env = append(env, k+"="+v) }
	if httpAddr != "" {
		u := "http://" + httpAddr
		for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
			set(k, u)
		}
		set("NODE_USE_ENV_PROXY", "1")
	}
	if socksAddr != "" {
		set("ALL_PROXY", "socks5h://"+socksAddr)
		set("all_proxy", "socks5h://"+socksAddr)
	}
	if httpAddr != "" || socksAddr != "" {
		const local = "localhost,127.0.0.1,::1"
		set("NO_PROXY", local)
		set("no_proxy", local)
	}
	return env
}

// EnvNames are the names EnvVars sets when given both addresses, for a
// report that lists names only.
func EnvNames() []string {
	var names []string
	for _, kv := range EnvVars("x", "x") {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// CountedDenial is a Denial with the number of times it was seen.
type CountedDenial struct {
	Denial
	Count int `json:"count"`
}

// Collector deduplicates denials: Add is an Options.OnDenial. Two denials
// are the same when domain, port and reason are; the first one's address
// is kept. The zero value is ready; it is safe for concurrent use.
type Collector struct {
	mu    sync.Mutex
	index map[denialKey]int
	list  []CountedDenial
}

type denialKey struct {
	domain string
	port   int
	reason string
}

// Add records d.
func (c *Collector) Add(d Denial) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := denialKey{d.Domain, d.Port, d.Reason}
	if i, ok := c.index[k]; ok {
		c.list[i].Count++
		return
	}
	if c.index == nil {
		c.index = map[denialKey]int{}
	}
	c.index[k] = len(c.list)
	c.list = append(c.list, CountedDenial{Denial: d, Count: 1})
}

// Denials returns the denials seen, sorted by domain, port and reason.
func (c *Collector) Denials() []CountedDenial {
	c.mu.Lock()
	out := append([]CountedDenial(nil), c.list...)
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Reason < b.Reason
	})
	return out
}
