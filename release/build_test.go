package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testVersion = "0.0.0-test"

// root is the repository's top directory (tests run in release/).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// build runs src's release/build.sh into out with the environment env
// added, and fails the test with its output when it fails.
func build(t *testing.T, src, out string, env ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("bash", filepath.Join(src, "release", "build.sh"), testVersion, out)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh in %s: %v\n%s", src, err, b)
	}
	t.Logf("build.sh in %s: %s", src, time.Since(start).Round(time.Second))
}

func TestBuildRefusesBadVersion(t *testing.T) {
	for _, v := range []string{"", "1.2", "latest", "1.2.3 ", "1.2.3/../x"} {
		out := t.TempDir()
		cmd := exec.Command("bash", filepath.Join(root(t), "release", "build.sh"), v, out)
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("build.sh %q: err %v, want exit 2\n%s", v, err, b)
			continue
		}
		if !strings.Contains(string(b), "VERSION") {
			t.Errorf("build.sh %q: the error does not name VERSION: %s", v, b)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("build.sh %q: wrote %d files before refusing", v, len(entries))
		}
	}
}

// TestReproducible builds the release twice, once from this checkout and
// once from a clone of its commit in another directory with an empty build
// cache, and wants identical SHA256SUMS: neither the path, nor the cache,
// nor the time of the build may show in an artefact.
func TestReproducible(t *testing.T) {
	if testing.Short() || os.Getenv("SBX_RELEASE_TEST") != "1" {
		t.Skip("slow (two cross-builds of six targets): run with SBX_RELEASE_TEST=1, as .ci/run does")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the test runs the linux/amd64 binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	src := root(t)
	// Read once: a commit made while the test runs must not change what it
	// expects (build.sh reads HEAD when it starts).
	commit := git(t, src, "rev-parse", "HEAD")
	ct, err := strconv.ParseInt(git(t, src, "log", "-1", "--format=%ct", commit), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Unix(ct, 0).UTC().Format(time.RFC3339)

	tmp := t.TempDir()
	out1, out2 := filepath.Join(tmp, "dist1"), filepath.Join(tmp, "dist2")
	build(t, src, out1)

	clone := filepath.Join(tmp, "elsewhere", "sbx")
	git(t, tmp, "clone", "--quiet", "--shared", "--no-checkout", src, clone)
	git(t, clone, "checkout", "--quiet", "--detach", commit)
	// What is built is the commit: neither an uncommitted change nor an
	// untracked file (this one would not even compile) may reach it.
	if err := os.WriteFile(filepath.Join(clone, "cmd", "sbx", "zz_untracked.go"), []byte("package main\n\nvar _ = notDefined\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "NOTICE"), []byte("changed, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, clone, out2, "GOCACHE="+filepath.Join(tmp, "gocache"))

	sums1, err := os.ReadFile(filepath.Join(out1, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums2, err := os.ReadFile(filepath.Join(out2, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sums1, sums2) {
		t.Fatalf("SHA256SUMS differ:\n%s\n--- second build:\n%s", sums1, sums2)
	}
	names := artefacts(t, sums1)
	want := []string{
		"sbx-" + testVersion + "-darwin-amd64.tar.gz", "sbx-" + testVersion + "-darwin-arm64.tar.gz",
		"sbx-" + testVersion + "-linux-amd64.tar.gz", "sbx-" + testVersion + "-linux-arm64.tar.gz",
		"sbx-" + testVersion + "-windows-amd64.zip", "sbx-" + testVersion + "-windows-arm64.zip",
	}
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		want = append(want, "sbx_"+testVersion+"_amd64.deb")
	}
	clients := clientArtefacts(t, src)
	want = append(want, clients...)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists %v, want %v", names, want)
	}
	t.Logf("SHA256SUMS:\n%s", sums1)

	checkTarball(t, out1, commit, date)
	checkZip(t, out1)
	checkPairs(t, out1)
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		checkDeb(t, out1)
	}
	sbx := releaseBinary(t, out1)
	checkMCPStamp(t, filepath.Join(filepath.Dir(sbx), "sbx-mcp"))
	checkMCP(t, sbx)
	for _, name := range clients {
		if strings.HasSuffix(name, ".whl") {
			checkWheel(t, out1, src, date, sbx, name)
		} else {
			checkNpm(t, out1, src, date, sbx, name)
		}
	}
}

// checkDeb checks the .deb's control fields and files, and runs its
// binaries: sbx --version, and sbx mcp with the sbx-mcp beside it.
func checkDeb(t *testing.T, dist string) {
	t.Helper()
	deb := filepath.Join(dist, "sbx_"+testVersion+"_amd64.deb")
	out, err := exec.Command("dpkg-deb", "--field", deb, "Package", "Version", "Architecture").Output()
	if err != nil {
		t.Fatalf("dpkg-deb --field: %v", err)
	}
	if want := "Package: sbx\nVersion: " + testVersion + "\nArchitecture: amd64\n"; string(out) != want {
		t.Errorf("control fields:\n%s\nwant:\n%s", out, want)
	}
	root := t.TempDir()
	if b, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, b)
	}
	for _, p := range []string{"usr/share/man/man1/sbx.1.gz", "usr/share/man/man1/sbx-run.1.gz",
		"usr/share/bash-completion/completions/sbx", "usr/share/zsh/vendor-completions/_sbx",
		"usr/share/fish/vendor_completions.d/sbx.fish", "usr/share/doc/sbx/copyright"} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s in the .deb: %v, mode %v; want a 0644 file", p, err, fi)
		}
	}
	for _, p := range []string{"usr/bin/sbx", "usr/bin/sbx-mcp"} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s in the .deb: %v, mode %v; want a 0755 file", p, err, fi)
		}
	}
	out, err = exec.Command(filepath.Join(root, "usr", "bin", "sbx"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "sbx "+testVersion+" ") {
		t.Errorf("the .deb's sbx --version = %q, %v", out, err)
	}
	checkMCP(t, filepath.Join(root, "usr", "bin", "sbx"))
}

// artefacts returns the file names SHA256SUMS lists, in its order.
func artefacts(t *testing.T, sums []byte) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			t.Fatalf("SHA256SUMS line %q: want HASH NAME", line)
		}
		names = append(names, f[1])
	}
	return names
}

// checkTarball unpacks the linux/amd64 archive, checks its members and their
// metadata, and runs the binary in it.
func checkTarball(t *testing.T, dist, commit, date string) {
	t.Helper()
	prefix := "sbx-" + testVersion + "-linux-amd64/"
	unpacked := t.TempDir()
	members := readArchive(t, filepath.Join(dist, "sbx-"+testVersion+"-linux-amd64.tar.gz"), date, unpacked)
	for _, m := range []string{"sbx", "sbx-mcp", "LICENSE", "NOTICE", "README.md", "CHANGELOG.md",
		"man/man1/sbx.1", "man/man1/sbx-run.1", "man/man1/sbx-exec.1", "man/man1/sbx-fs.1",
		"completions/sbx.bash", "completions/_sbx", "completions/sbx.fish"} {
		if !contains(members, prefix+m) {
			t.Errorf("archive lacks %s (has %v)", prefix+m, members)
		}
	}

	bin := filepath.Join(unpacked, filepath.FromSlash(prefix), "sbx")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("sbx --version: %v\n%s", err, out)
	}
	wantLine := "sbx " + testVersion + " (commit " + commit[:12] + ", " + date + ", " + runtime.Version() + ")\n"
	if string(out) != wantLine {
		t.Errorf("sbx --version = %q, want %q", out, wantLine)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("sbx version --json: %v", err)
	}
	var info struct {
		Version, Commit, Date, Source string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("sbx version --json: %v\n%s", err, out)
	}
	if info.Version != testVersion || info.Commit != commit || info.Date != date || info.Source != "ldflags" {
		t.Errorf("sbx version --json = %+v, want %s, %s, %s, ldflags", info, testVersion, commit, date)
	}
	page, err := os.ReadFile(filepath.Join(unpacked, filepath.FromSlash(prefix), "man", "man1", "sbx-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	// roff spells a hyphen \-.
	header := `.TH SBX-RUN 1 "` + strings.ReplaceAll(date[:10], "-", `\-`) + `" "sbx ` + strings.ReplaceAll(testVersion, "-", `\-`) + `"`
	if !bytes.Contains(page, []byte(header)) {
		t.Errorf("sbx-run.1 lacks the header %s (the commit's date and the version):\n%.200s", header, page)
	}
}

// checkZip checks the windows/amd64 archive holds the .exes and the docs.
func checkZip(t *testing.T, dist string) {
	t.Helper()
	prefix := "sbx-" + testVersion + "-windows-amd64/"
	zr, err := zip.OpenReader(filepath.Join(dist, "sbx-"+testVersion+"-windows-amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("zip names are not sorted: %v", names)
	}
	for _, m := range []string{"sbx.exe", "sbx-mcp.exe", "LICENSE", "README.md", "man/man1/sbx.1", "completions/sbx.bash"} {
		if !contains(names, prefix+m) {
			t.Errorf("zip lacks %s (has %v)", prefix+m, names)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readArchive reads a .tar.gz as build.sh packs them (gzip -n; members
// sorted, owner 0/0, dated the commit), checks that, unpacks its files into
// dir, and returns its members' names.
func readArchive(t *testing.T, path, date, dir string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("%s: gzip header has name %q, time %v: want neither (gzip -n)", filepath.Base(path), zr.Name, zr.ModTime)
	}
	wantTime, err := time.Parse(time.RFC3339, date)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var members []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(wantTime) {
			t.Errorf("%s: owner %d/%d, time %v; want 0/0, %v", h.Name, h.Uid, h.Gid, h.ModTime, wantTime)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
			t.Fatal(err)
		}
	}
	if !sort.StringsAreSorted(members) {
		t.Errorf("%s: members are not sorted: %v", filepath.Base(path), members)
	}
	return members
}
