//go:build linux

package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/integration/localreg"
)

// The local package registries of the workflow corpus (issue 29): PyPI and
// the npm registry are not reachable from CI, and a test must not depend
// on them. The servers live in package localreg (bench/workflows uses them
// too); these helpers tie them to a test. They run as whoever runs the
// suite (root or sbxtest): every file is in a t.TempDir() of that user, and
// verdaccio is read from testdata/verdaccio, which .ci/run installs and
// test.sh copies world-readable for the unprivileged pass.
//
// Sandboxed, a command does not reach these URLs as they are: its
// 127.0.0.1 is its own network namespace's loopback, and sbx's NO_PROXY
// sends 127.0.0.1 past its domain proxy. It reaches them by a name pinned
// for the proxy, as bench/workflows does: the URL with registry.sbx.test
// for 127.0.0.1, and --allow-domain registry.sbx.test:PORT --resolve
// registry.sbx.test:PORT:127.0.0.1 --allow-private-addresses (exec:
// additional_permissions.network and resolve); pip then needs
// --trusted-host registry.sbx.test (it trusts plain HTTP from loopback
// only).

// hostTool skips the test when a program of the workflow corpus is not
// installed: the corpus runs on the host only (.ci/run installs node, npm
// and python3 there); the VM guests and containers of the kernel matrix
// are busybox images without them.
func hostTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("SKIP: %s is not installed: the workflow corpus runs on the host only, where .ci/run installs it", name)
	}
}

// startNpmRegistry starts a verdaccio with no uplink, its storage in a
// t.TempDir(), on a free loopback port, with localreg.NpmPackage (which
// depends on localreg.NpmBase) published into it, and returns its URL
// (http://127.0.0.1:PORT/, for npm's --registry or npm_config_registry).
// It stops at the test's cleanup. Skips when node or npm is absent, or
// verdaccio is not installed in testdata/verdaccio.
func startNpmRegistry(t *testing.T) string {
	t.Helper()
	hostTool(t, "node")
	hostTool(t, "npm")
	dir, err := filepath.Abs(filepath.Join("testdata", "verdaccio"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := localreg.StartNpm(localreg.VerdaccioBin(dir), t.TempDir())
	if errors.Is(err, localreg.ErrNoVerdaccio) {
		t.Skipf("SKIP: %v (.ci/run installs it; test.sh copies it for the unprivileged pass)", err)
	}
	if err != nil {
		t.Fatalf("start the local npm registry: %v", err)
	}
	t.Cleanup(n.Stop)
	return n.URL
}

// npmTarball returns the path of a package tarball made with `npm pack`
// (localreg.NpmLocal, no dependencies), for `npm install FILE`.
func npmTarball(t *testing.T) string {
	t.Helper()
	hostTool(t, "npm")
	p, err := localreg.PackNpm(t.TempDir())
	if err != nil {
		t.Fatalf("npm pack: %v", err)
	}
	return p
}

// startPipIndex serves a PEP 503 simple index of two pure-Python wheels
// written here (localreg.PipPackage requires localreg.PipBase) from this
// process on a free loopback port, and returns its URL
// (http://127.0.0.1:PORT/simple/, for pip's --index-url). It stops at the
// test's cleanup.
func startPipIndex(t *testing.T) string {
	t.Helper()
	idx, err := localreg.ServePipIndex(t.TempDir())
	if err != nil {
		t.Fatalf("start the local pip index: %v", err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx.URL
}

// bareCmd runs a command outside any sandbox in dir with extra environment
// variables and returns its combined output.
func bareCmd(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLocalNpmRegistry installs from startNpmRegistry and npmTarball bare,
// as the workflow corpus will under sbx: the package and its dependency
// come from the local registry, the tarball installs from its file, and a
// name the registry was not given is not found (no uplink: nothing comes
// from the internet).
func TestLocalNpmRegistry(t *testing.T) {
	url := startNpmRegistry(t)
	tgz := npmTarball(t)
	proj := t.TempDir()
	writeFile(t, filepath.Join(proj, "package.json"), `{"name":"proj","version":"1.0.0","private":true}`+"\n")
	npmrc := filepath.Join(t.TempDir(), "npmrc")
	writeFile(t, npmrc, "")
	env := []string{"npm_config_cache=" + filepath.Join(t.TempDir(), "npm-cache"), "npm_config_userconfig=" + npmrc,
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false"}

	if out, err := bareCmd(t, proj, env, "npm", "install", "--registry", url, localreg.NpmPackage); err != nil {
		t.Fatalf("npm install %s from %s: %v\n%s", localreg.NpmPackage, url, err, out)
	}
	if out, err := bareCmd(t, proj, env, "npm", "install", tgz); err != nil {
		t.Fatalf("npm install %s: %v\n%s", tgz, err, out)
	}
	out, err := bareCmd(t, proj, nil, "node", "-e",
		`console.log(require("`+localreg.NpmPackage+`")() + " " + require("`+localreg.NpmLocal+`"))`)
	if err != nil || strings.TrimSpace(out) != "hello from base local" {
		t.Fatalf("node: the installed packages: %v: %q, want %q", err, out, "hello from base local")
	}
	out, err = bareCmd(t, proj, env, "npm", "view", "--registry", url, "left-pad", "version")
	if err == nil || !strings.Contains(out, "E404") {
		t.Fatalf("npm view left-pad from the local registry: %v: %s; want E404 (no uplink)", err, out)
	}
}

// TestLocalPipIndex installs from startPipIndex bare into a venv
// (python3-venv on Debian): the package and its dependency come from the
// index, and a name it does not hold is not found (no PyPI behind it).
func TestLocalPipIndex(t *testing.T) {
	hostTool(t, "python3")
	url := startPipIndex(t)
	dir := t.TempDir()
	venv := filepath.Join(dir, "venv")
	if out, err := bareCmd(t, dir, nil, "python3", "-m", "venv", venv); err != nil {
		t.Fatalf("python3 -m venv (Debian: python3-venv): %v\n%s", err, out)
	}
	env := []string{"PIP_CACHE_DIR=" + filepath.Join(t.TempDir(), "pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_NO_INPUT=1", "PIP_CONFIG_FILE=" + os.DevNull}
	pip := filepath.Join(venv, "bin", "pip")
	if out, err := bareCmd(t, dir, env, pip, "install", "--index-url", url, localreg.PipPackage); err != nil {
		t.Fatalf("pip install %s from %s: %v\n%s", localreg.PipPackage, url, err, out)
	}
	out, err := bareCmd(t, dir, nil, filepath.Join(venv, "bin", "python"), "-c", "import sbxwf_greet; print(sbxwf_greet.greet())")
	if err != nil || strings.TrimSpace(out) != "hello from base" {
		t.Fatalf("python: the installed package: %v: %q, want %q", err, out, "hello from base")
	}
	out, err = bareCmd(t, dir, env, pip, "install", "--index-url", url, "six")
	if err == nil || !strings.Contains(out, "No matching distribution") {
		t.Fatalf("pip install six from the local index: %v: %s; want no matching distribution (no PyPI behind it)", err, out)
	}
}
