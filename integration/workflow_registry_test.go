//go:build linux

package integration

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/integration/localreg"
)

// The corpus's workflows that install packages (issue 29; the harness is
// workflow_test.go): npm install and npm ci from a local registry
// (verdaccio, no uplink: registry_test.go) and npm install of a local
// tarball, in one project; pip install into a venv from a local PEP 503
// index. The registries listen on the host's loopback.

// npmTimings is the part of npm's "added N packages in 1s" that differs
// between runs.
var npmTimings = regexp.MustCompile(`in \d+(\.\d+)?m?s\b`)

// npmEnv is npm's environment: no update check, audit or funding message
// (each a request beyond the packages, and output that differs).
func npmEnv(bin map[string]string) []string {
	return []string{toolPath(bin, "node", "npm"), "npm_config_update_notifier=false", "npm_config_audit=false",
		"npm_config_fund=false", "npm_config_loglevel=warn"}
}

// npmProject writes the package.json of a project with no dependencies.
func npmProject(t *testing.T, ws string, bin map[string]string) {
	writeFile(t, filepath.Join(ws, "package.json"), `{"name": "proj", "version": "1.0.0", "private": true}`+"\n")
}

// network is the pip workflow's: the network on (pip trusts plain http
// from loopback only, so not through the proxy by a name).
func network(map[string]string) map[string]any { return map[string]any{"network_access": true} }

// registryName is the local npm registry's name under sbx, pinned to the
// host's loopback with resolve, as bench/workflows names it.
const registryName = "registry.sbx.test"

var registryCorpus = []workflow{
	// One project's life with one registry (a verdaccio takes seconds to
	// start): npm install from the registry, npm install of a tarball on
	// disk, then npm ci from the lock file those wrote, and the packages
	// used.
	//
	// The network stays off, as workspace-write has it: the registry is
	// reached through sbx's domain proxy by a name pinned to the host's
	// loopback (the sandbox's 127.0.0.1 is its own), allowed as the
	// runtime's own permission (preauthorized), as a runtime allows its
	// registry.
	{name: "npm", tools: []string{"node", "npm"}, relocate: "npm_config_cache",
		prepare: func(t *testing.T, bin map[string]string) {
			bin["registry"], bin["tarball"] = startNpmRegistry(t), npmTarball(t)
			u, err := url.Parse(bin["registry"])
			if err != nil {
				t.Fatal(err)
			}
			bin["proxied"] = registryName + ":" + u.Port()
		},
		request: func(bin map[string]string) map[string]any {
			return map[string]any{"resolve": []string{bin["proxied"] + ":127.0.0.1"}, "preauthorized": true,
				"additional_permissions": map[string]any{"network": map[string]any{"enabled": true,
					"allowed_domains": []string{bin["proxied"]}, "allow_private_addresses": true}}}
		},
		sandboxed: func(bin map[string]string, step []string) []string {
			out := slices.Clone(step)
			for i, a := range out {
				out[i] = strings.ReplaceAll(a, bin["registry"], "http://"+bin["proxied"]+"/")
			}
			return out
		},
		setup: npmProject,
		steps: func(bin map[string]string) [][]string {
			use := []string{bin["node"], "-e", `console.log(require("` + localreg.NpmPackage + `")(), require("` + localreg.NpmLocal + `"))`}
			return [][]string{{bin["npm"], "install", "--registry", bin["registry"], localreg.NpmPackage},
				{bin["npm"], "install", "--registry", bin["registry"], bin["tarball"]}, use,
				{bin["npm"], "ci", "--registry", bin["registry"]}, use}
		},
		env: npmEnv, norm: func(s string) string { return npmTimings.ReplaceAllString(s, "in TIME") }},

	// pip into a venv (Debian's python3-venv), made once and copied into
	// each workspace (python -m pip runs the copy's own: a venv's scripts
	// name the interpreter of the place it was made, its python does not).
	{name: "pip", tools: []string{"python3"}, relocate: "PIP_CACHE_DIR", request: network,
		prepare: func(t *testing.T, bin map[string]string) {
			bin["index"] = startPipIndex(t)
			bin["venv"] = filepath.Join(t.TempDir(), "venv")
			if b, err := exec.Command(bin["python3"], "-m", "venv", bin["venv"]).CombinedOutput(); err != nil {
				t.Fatalf("python3 -m venv (Debian: python3-venv): %v\n%s", err, b)
			}
		},
		setup: func(t *testing.T, ws string, bin map[string]string) {
			if b, err := exec.Command("cp", "-a", bin["venv"], filepath.Join(ws, "venv")).CombinedOutput(); err != nil {
				t.Fatalf("copy the venv: %v\n%s", err, b)
			}
		},
		steps: func(bin map[string]string) [][]string {
			return [][]string{{"venv/bin/python", "-m", "pip", "install", "--index-url", bin["index"], localreg.PipPackage},
				{"venv/bin/python", "-c", "import sbxwf_greet; print(sbxwf_greet.greet())"}}
		},
		env: func(bin map[string]string) []string {
			return []string{toolPath(bin, "python3"), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_PROGRESS_BAR=off",
				"PIP_CONFIG_FILE=" + os.DevNull}
		}},
}
