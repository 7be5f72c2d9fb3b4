package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Roots: the directories an MCP session works in. The server's flags give
// them (--root, else --cwd); a client that offers MCP roots narrows them,
// never widens them: the session's roots are the intersection, each pair
// of nested directories giving the inner one. A call's cwd must be inside
// a root, and under workspace-write the roots are the writable roots.
//
// The roots are read when the session's first call opens its sbx session,
// and again before the first call after each
// notifications/roots/list_changed; a call already running keeps the
// roots it started with.

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

// listRoots is the session's roots: the server's (--root, else --cwd),
// narrowed by the client's MCP roots when it offers them. None left is an
// error: every call is refused.
func (s *Server) listRoots(ctx context.Context, ss *sdk.ServerSession) ([]string, error) {
	roots := s.opt.Roots
	if len(roots) == 0 {
		roots = []string{filepath.Clean(s.opt.Cwd)}
	}
	if p := ss.InitializeParams(); p != nil && p.Capabilities != nil && p.Capabilities.RootsV2 != nil {
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("roots/list: %w", err)
		}
		var client []string
		for _, r := range res.Roots {
			if p, ok := rootPath(r.URI); ok {
				client = append(client, p)
			}
		}
		// A client that lists no root (the Go SDK's client declares the
		// capability with none) offers nothing to narrow by.
		if len(res.Roots) > 0 {
			roots = narrow(roots, client)
		}
	}
	if len(roots) == 0 {
		return nil, errors.New("no root: the client's MCP roots are all outside the server's (--root)")
	}
	return roots, nil
}

// rootsChanged marks ss's session's roots stale: the client sent
// notifications/roots/list_changed.
func (s *Server) rootsChanged(ss *sdk.ServerSession) {
	s.mu.Lock()
	sess := s.sessions[ss]
	s.mu.Unlock()
	if sess == nil {
		return // not opened yet: its first call lists them
	}
	sess.mu.Lock()
	sess.rootsStale = true
	sess.mu.Unlock()
}

// currentRoots is the roots a call of sess runs with, and its default
// cwd: listed again from the client first when they are stale. A listing
// that fails, or leaves no root, refuses the call and leaves them stale
// (fails closed: never the old, wider roots).
func (s *Server) currentRoots(ctx context.Context, ss *sdk.ServerSession, sess *session) ([]string, string, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.rootsStale {
		roots, err := s.listRoots(ctx, ss)
		if err != nil {
			return nil, "", err
		}
		sess.roots, sess.rootsStale = roots, false
	}
	cwd := sess.cwd
	if !inside(cwd, sess.roots) {
		cwd = sess.roots[0]
	}
	return sess.roots, cwd, nil
}
