package release

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// wheelPython is the python3 build.sh builds the wheel with: the first of
// python3 and /usr/bin/python3 that has build, wheel and setuptools, as
// build.sh picks it; "" when none has.
func wheelPython() string {
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(c, "-c", "import build, wheel, setuptools").Run() == nil {
			return c
		}
	}
	return ""
}

// clientArtefacts is what build.sh makes of the clients on this machine:
// the wheel where wheelPython finds a python3, the npm tarball where npm is.
func clientArtefacts(t *testing.T, src string) []string {
	t.Helper()
	var names []string
	if wheelPython() != "" {
		b, err := os.ReadFile(filepath.Join(src, "clients", "python", "pyproject.toml"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^version = "([^"]+)"$`).FindSubmatch(b)
		if m == nil {
			t.Fatal("clients/python/pyproject.toml: no version line")
		}
		names = append(names, "sbx_client-"+string(m[1])+"-py3-none-any.whl")
	}
	if _, err := exec.LookPath("npm"); err == nil {
		names = append(names, "sbx-sandbox-client-"+npmVersion(t, src)+".tgz")
	}
	return names
}

func npmVersion(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, "clients", "typescript", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != "@sbx-sandbox/client" {
		t.Errorf("clients/typescript/package.json: name %q, want @sbx-sandbox/client", pkg.Name)
	}
	return pkg.Version
}

// releaseBinary unpacks the linux/amd64 archive's sbx into a directory of
// its own and returns its path: the clients' examples run it.
func releaseBinary(t *testing.T, dist string) string {
	t.Helper()
	dir := t.TempDir()
	name := "sbx-" + testVersion + "-linux-amd64"
	if b, err := exec.Command("tar", "-xzf", filepath.Join(dist, name+".tar.gz"), "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, b)
	}
	return filepath.Join(dir, name, "sbx")
}

// runExample runs a client's README example (argv) with the release's sbx
// and wants it through its denial and retry, as the clients' own tests do.
func runExample(t *testing.T, sbx, dir string, argv ...string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SBX="+sbx, "TMPDIR="+tmp, "PYTHONPATH=", "NODE_PATH=")
	out, err := cmd.CombinedOutput()
	if m := regexp.MustCompile(`denied: create (/var/tmp/\S+)/note \(`).FindSubmatch(out); m != nil {
		os.RemoveAll(string(m[1]))
	} else {
		t.Errorf("%s: no denial in its output", argv)
	}
	if err != nil || !strings.Contains(string(out), "exit 0 note: hi") {
		t.Errorf("%s: %v\n%s", argv, err, out)
	}
}

// checkWheel checks the wheel's members (py.typed among them) and their
// dates, installs it with pip --no-index into a fresh venv, and runs the
// README's example with the venv's python and nothing of the checkout.
func checkWheel(t *testing.T, dist, src, date, sbx string, name string) {
	t.Helper()
	whl := filepath.Join(dist, name)
	zr, err := zip.OpenReader(whl)
	if err != nil {
		t.Fatal(err)
	}
	wantTime, err := time.Parse(time.RFC3339, date)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, f := range zr.File {
		members = append(members, f.Name)
		// DOS times have a 2-second resolution.
		if d := f.Modified.Sub(wantTime); d < -2*time.Second || d > 2*time.Second {
			t.Errorf("%s in the wheel: time %v, want %v", f.Name, f.Modified, wantTime)
		}
	}
	zr.Close()
	for _, m := range []string{"sbx/__init__.py", "sbx/server.py", "sbx/py.typed"} {
		if !contains(members, m) {
			t.Errorf("the wheel lacks %s (has %v)", m, members)
		}
	}
	venv := filepath.Join(t.TempDir(), "venv")
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	for _, argv := range [][]string{{py, "-m", "venv", venv}, {filepath.Join(venv, "bin", "pip"), "install", "-q", "--no-index", whl}} {
		if b, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", argv, err, b)
		}
	}
	runExample(t, sbx, t.TempDir(), filepath.Join(venv, "bin", "python"), filepath.Join(src, "clients", "python", "examples", "readme.py"))
}

// checkNpm checks the npm tarball as the archives are checked (gzip -n,
// sorted members of owner 0/0 dated the commit), installs it offline into a
// fresh project, and runs the README's example against what was installed.
func checkNpm(t *testing.T, dist, src, date, sbx string, name string) {
	t.Helper()
	tgz := filepath.Join(dist, name)
	members := readArchive(t, tgz, date, t.TempDir())
	for _, m := range []string{"package/package.json", "package/README.md", "package/dist/src/index.js", "package/dist/src/index.d.ts", "package/dist/src/server.js"} {
		if !contains(members, m) {
			t.Errorf("%s lacks %s (has %v)", name, m, members)
		}
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name": "release-check", "private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// --offline: the tarball has no runtime dependencies; installing it needs no registry.
	cmd := exec.Command("npm", "install", "--offline", "--no-audit", "--no-fund", tgz)
	cmd.Dir = proj
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", name, err, b)
	}
	// The README's example is TypeScript; its types are all that is not
	// JavaScript, and they go (what is left must name no type).
	b, err := os.ReadFile(filepath.Join(src, "clients", "typescript", "examples", "readme.ts"))
	if err != nil {
		t.Fatal(err)
	}
	js := strings.NewReplacer(", type ExecResult", "", ") as ExecResult", ")", " as const", "").Replace(string(b))
	if strings.Contains(js, "ExecResult") || strings.Contains(js, " as ") {
		t.Fatalf("examples/readme.ts has types this test does not strip:\n%s", js)
	}
	if err := os.WriteFile(filepath.Join(proj, "readme.js"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	runExample(t, sbx, proj, "node", "readme.js")
}
