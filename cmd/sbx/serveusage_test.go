package main

import (
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/serve"
)

// TestServeUsageMethods: sbx serve --help names every method the server
// answers, from the one method table (call/status was missing from it).
func TestServeUsageMethods(t *testing.T) {
	for _, m := range serve.Methods() {
		if !strings.Contains(serveUsage, m) {
			t.Errorf("sbx serve's usage does not name the method %s", m)
		}
	}
}
