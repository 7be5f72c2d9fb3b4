//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sbx-sandbox/sbx/integration/localreg"
)

// The corpus's workflows that install packages (issue 29; the harness is
// workflow_test.go): npm install and npm ci from a local registry
// (verdaccio, no uplink: registry_test.go) and npm install of a local
// tarball, in one project; pip install into a venv from a local PEP 503
// index. The
// registries listen on the host's loopback; a call reaches them with the
// network on (network_access, the runtime's own setting), as it would
// reach the public registries.

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

var network = map[string]any{"network_access": true}

var registryCorpus = []workflow{
	// One project's life with one registry (a verdaccio takes seconds to
	// start): npm install from the registry, npm install of a tarball on
	// disk, then npm ci from the lock file those wrote, and the packages
	// used.
	{name: "npm", tools: []string{"node", "npm"}, relocate: "npm_config_cache", request: network,
		prepare: func(t *testing.T, bin map[string]string) {
			bin["registry"], bin["tarball"] = startNpmRegistry(t), npmTarball(t)
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
