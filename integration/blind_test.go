//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The supervisor is not a wall (DESIGN.md, invariant 1): it reads the
// caller's memory and /proc after the fact. These are the ways a command
// hid from it what a call reaches, on the code before the fail-closed
// change: each went through. Now the filter refuses the hiding itself
// (memfd_secret, chroot), or the supervisor refuses what it cannot see.

// directProbe runs the probe outside the sandbox without a test, for the
// feature checks.
func directProbe(args ...string) (probeResult, error) {
	b, err := exec.Command(probeBin, args...).Output()
	if err != nil {
		return probeResult{}, fmt.Errorf("probe %q: %v", args, err)
	}
	var r probeResult
	if err := json.Unmarshal(b, &r); err != nil {
		return probeResult{}, fmt.Errorf("probe %q: %v: %s", args, err, b)
	}
	return r, nil
}

func checkMemfdSecret() (string, error) {
	r, err := directProbe("memfd-secret")
	switch {
	case err != nil:
		return "", err
	case r.OK:
		return "", nil
	case r.Errno == "ENOSYS":
		return "memfd_secret says ENOSYS: CONFIG_SECRETMEM is off, or the kernel was booted without secretmem.enable=1 (needed before Linux 6.5)", nil
	}
	return "", fmt.Errorf("memfd_secret: %s", r)
}

func checkLinkatEmptyPath() (string, error) {
	dir, err := os.MkdirTemp("", "sbx-linkat-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	// Without capabilities, as the sandboxed command runs (root's too).
	r, err := directProbe("tmpfile-link", "empty-nocaps", dir, filepath.Join(dir, "named"))
	switch {
	case err != nil:
		return "", err
	case r.OK:
		return "", nil
	case r.Errno == "EOPNOTSUPP":
		return "the temporary directory's file system has no O_TMPFILE", nil
	}
	return "", fmt.Errorf("linkat AT_EMPTY_PATH: %s", r)
}

// fileMode returns the permission bits of p.
func fileMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// outsideFile is a file of the test's user, mode 0644, outside every
// writable root of wsOnly.
func outsideFile(t *testing.T) (dir, file string) {
	dir = varTmpDir(t)
	file = writeFile(t, filepath.Join(dir, "f"), "outside\n")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// wantInferred asserts a fail-closed refusal in the report: a supervisor
// denial with confidence "inferred" whose reason says what it did not see.
func wantInferred(t *testing.T, rep *report, op string) {
	t.Helper()
	for _, d := range rep.Denials {
		if d.Operation == op && d.Source == "seccomp-supervisor" && d.Confidence == "inferred" && strings.Contains(d.Reason, "could not see") {
			return
		}
	}
	t.Errorf("want an inferred %s denial from the supervisor, got %+v", op, rep.Denials)
}

// TestSecretMemoryPath: a path in memfd_secret memory is one
// process_vm_readv cannot read, so the supervisor saw nothing and chmod
// outside the writable roots (which Landlock does not restrict) and mkdir of
// an absent .git went through. The filter refuses memfd_secret with ENOSYS,
// what a kernel without secretmem says; the same chmod with the path in
// ordinary memory is refused (EPERM), and chmod in the workspace works.
func TestSecretMemoryPath(t *testing.T) {
	Require(t, "memfd_secret")
	c := caps(t)
	ws := workspace(t)
	_, outside := outsideFile(t)
	r, _ := probe(t, ws, wsOnly, "secret-chmod", outside, "777")
	want(t, r, "ENOSYS")
	if r.Detail != "memfd_secret" {
		t.Errorf("the refusal is not memfd_secret's: %s", r)
	}
	if m := fileMode(t, outside); m != 0o644 {
		t.Errorf("%s: mode %o after the refused chmod, want 644", outside, m)
	}
	dotgit := filepath.Join(ws, ".git")
	r, _ = probe(t, ws, wsOnly, "secret-mkdir", dotgit)
	want(t, r, "ENOSYS")
	wantAbsent(dotgit)(t)

	// The neighbours: the same chmod with a readable path is the
	// supervisor's to refuse; in the workspace it works.
	if c.supervised {
		r, rep := probe(t, ws, wsOnly, "chmod", outside, "777")
		want(t, r, "EPERM")
		if !rep.denied("chmod", outside) {
			t.Errorf("no chmod denial of %s: %+v", outside, rep.Denials)
		}
	}
	mine := writeFile(t, filepath.Join(ws, "mine"), "x\n")
	r, _ = probe(t, ws, wsOnly, "chmod", mine, "600")
	want(t, r, "")
	if m := fileMode(t, mine); m != 0o600 {
		t.Errorf("%s: mode %o, want 600", mine, m)
	}
	// Without the sandbox the secret memory works: the ENOSYS is the filter's.
	r, _ = probe(t, ws, danger, "secret-chmod", mine, "640")
	want(t, r, "")
}

// TestUnreadablePath: a path the supervisor cannot read (a PROT_NONE page:
// process_vm_readv fails on it) is refused with EACCES and an inferred
// denial, never let through to whatever the kernel decides. (The kernel
// would say EFAULT; without the supervisor it does.)
func TestUnreadablePath(t *testing.T) {
	c := caps(t)
	ws := workspace(t)
	_, outside := outsideFile(t)
	r, rep := probe(t, ws, wsOnly, "unreadable-chmod", outside, "777")
	if !c.supervised {
		want(t, r, "EFAULT")
		return
	}
	want(t, r, "EACCES")
	wantInferred(t, rep, "chmod")
	if m := fileMode(t, outside); m != 0o644 {
		t.Errorf("%s: mode %o, want 644", outside, m)
	}
}

// TestTmpfileLinkGit: an O_TMPFILE has no name (/proc/PID/fd/N reads
// "/ws/#N (deleted)"), and linking it as .git, where the workspace has none,
// made a gitdir file pointing anywhere: the supervisor could not resolve the
// old name and let the call continue. Now an old name in no directory is no
// source to check and the new name is checked: .git is refused (EACCES, a
// create denial) and an ordinary name works, by AT_EMPTY_PATH and by
// /proc/self/fd/N.
func TestTmpfileLinkGit(t *testing.T) {
	c := caps(t)
	for _, form := range []string{"proc", "empty"} {
		t.Run(form, func(t *testing.T) {
			if form == "empty" {
				// The command holds no CAP_DAC_READ_SEARCH, root's neither.
				Require(t, "linkat-empty-path")
			}
			ws := workspace(t)
			dotgit := filepath.Join(ws, ".git")
			r, rep := probe(t, ws, wsOnly, "tmpfile-link", form, ".", ".git")
			switch {
			case !c.supervised && c.namespaces:
				// The placeholder's read-only mount refuses it.
				want(t, r, "EEXIST")
				return
			case !c.supervised:
				want(t, r, "")
				t.Logf("creating .git is not prevented without the supervisor (documented gap, carve-out-create)")
				return
			}
			want(t, r, "EACCES")
			wantAbsent(dotgit)(t)
			if !rep.denied("create", dotgit) {
				t.Errorf("no create denial of %s: %+v", dotgit, rep.Denials)
			}
			r, _ = probe(t, ws, wsOnly, "tmpfile-link", form, ".", "ordinary")
			want(t, r, "")
			wantContent(filepath.Join(ws, "ordinary"), "gitdir: /somewhere/else\n")(t)
		})
	}
}

// TestUnixBindGit: bind() of an AF_UNIX socket makes its name like mknod,
// so a socket named .git made the absent carve-out exist. It is refused
// like mkdir of it (EACCES, a create denial), with the network off and on;
// a socket of another name works, and so does a loopback TCP server.
func TestUnixBindGit(t *testing.T) {
	c := caps(t)
	for _, mode := range [][]string{wsOnly, append(append([]string{}, wsOnly...), "--network")} {
		t.Run(modeName(mode), func(t *testing.T) {
			ws := workspace(t)
			dotgit := filepath.Join(ws, ".git")
			r, rep := probe(t, ws, mode, "unix-serve", ".git")
			if c.supervised {
				want(t, r, "EACCES")
				wantAbsent(dotgit)(t)
				if !rep.denied("create", dotgit) {
					t.Errorf("no create denial of %s: %+v", dotgit, rep.Denials)
				}
			} else if c.namespaces {
				// The placeholder is there (bind says the name is taken).
				want(t, r, "EADDRINUSE")
			} else {
				want(t, r, "")
			}
			r, _ = probe(t, ws, mode, "unix-serve", "sock")
			want(t, r, "")
			if !c.namespaces && len(mode) == len(wsOnly) {
				// Without a network namespace the network off means
				// AF_UNIX sockets only (TestSocketFamilies).
				return
			}
			r, _ = probe(t, ws, mode, "listen-and-connect", "tcp4")
			want(t, r, "")
		})
	}
}

// TestChrootThenDelete: chroot into a directory, remove it, and the
// supervisor resolving a refusal read /proc/PID/root as "(deleted)" and let
// every call continue: chmod and chown outside the writable roots through
// an fd opened before, mkdir of an absent .git. Root could chroot, and any
// user after unshare(CLONE_NEWUSER|CLONE_NEWNS). The filter refuses chroot
// (EPERM), so the calls are decided as without it: EPERM for chmod and chown
// outside the roots, EACCES for .git, and an ordinary mkdir works.
func TestChrootThenDelete(t *testing.T) {
	c := caps(t)
	for _, ns := range []string{"plain", "userns"} {
		t.Run(ns, func(t *testing.T) {
			if ns == "userns" {
				Require(t, "userns")
			}
			ws := workspace(t)
			outDir, outside := outsideFile(t)
			n := 0
			try := func(op, dir, name, errno string) {
				t.Helper()
				n++
				r, _ := probe(t, ws, wsOnly, "chroot-then", ns, op, dir, name, filepath.Join(ws, fmt.Sprintf("jail%d", n)))
				if !strings.Contains(r.Detail, "chroot=EPERM") {
					t.Errorf("chroot was not refused with EPERM: %s", r)
				}
				if ns == "userns" && !strings.HasPrefix(r.Detail, "unshare=ok") {
					t.Errorf("the user namespace was not made: %s", r)
				}
				want(t, r, errno)
			}
			forbidden := map[bool]string{true: "EPERM", false: ""}[c.supervised]
			try("chmod", outDir, "f", forbidden)
			try("chown", outDir, "f", forbidden)
			if m := fileMode(t, outside); c.supervised && m != 0o644 {
				t.Errorf("%s: mode %o, want 644", outside, m)
			}
			try("mkdir", ws, ".git", map[bool]string{true: "EACCES", false: ""}[c.supervised])
			if c.supervised {
				wantAbsent(filepath.Join(ws, ".git"))(t)
			}
			try("mkdir", ws, "ordinary", "")
			try("chmod", ws, "ordinary", "")
		})
	}
}
