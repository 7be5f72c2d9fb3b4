package mcp

import (
	"net/url"
	"path/filepath"
	"strings"
)

// Roots: the directories an MCP session works in. The server's flags give
// them (--root, else --cwd); a client that offers MCP roots narrows them,
// never widens them: the session's roots are the intersection, each pair
// of nested directories giving the inner one. A call's cwd must be inside
// a root, and under workspace-write the roots are the writable roots.
//
// IMPORTANT: roots are read once, when the session's first call opens its
// sbx session; a later notifications/roots/list_changed is not followed.

// within says whether path is dir or under it (both clean and absolute).
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// inside says whether path is within one of roots.
func inside(path string, roots []string) bool {
	for _, r := range roots {
		if within(path, r) {
			return true
		}
	}
	return false
}

// narrow is the intersection of the server's roots and the client's: a
// client root inside a server root, or a server root inside a client
// root; never a directory no server root covers.
func narrow(server, client []string) []string {
	var out []string
	add := func(p string) {
		for _, o := range out {
			if o == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, c := range client {
		for _, s := range server {
			switch {
			case within(c, s):
				add(c)
			case within(s, c):
				add(s)
			}
		}
	}
	return out
}

// rootPath is the directory of a file:// root URI; ok is false for any
// other scheme, a host other than localhost, or a relative path.
func rootPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return "", false
	}
	return filepath.Clean(u.Path), true
}
