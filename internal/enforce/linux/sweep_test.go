//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestSweep: the post-call check removes a watched carve-out that
// appeared, whatever it holds, without following a symbolic link out of
// it, and reports it; one that did not appear is left alone, silently.
func TestSweep(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	dotgit, codex := filepath.Join(ws, ".git"), filepath.Join(ws, ".codex")
	ws2, err := openWatches([]string{dotgit, codex})
	if err != nil {
		t.Fatal(err)
	}
	// What a racing thread could leave: nested directories, a link out,
	// a hard link, a directory it made unreadable.
	must(t, os.MkdirAll(filepath.Join(dotgit, "hooks", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(dotgit, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(dotgit, "out")))
	must(t, os.Link(keep, filepath.Join(dotgit, "hooks", "deep", "hard")))
	must(t, os.Mkdir(filepath.Join(dotgit, "locked"), 0o755))
	must(t, os.WriteFile(filepath.Join(dotgit, "locked", "f"), nil, 0o644))
	must(t, os.Chmod(filepath.Join(dotgit, "locked"), 0))

	got := sweep(pol, ws2)
	if len(got) != 1 || got[0].Path != dotgit || got[0].Operation != "create" || got[0].Source != PostCallSource ||
		!strings.Contains(got[0].Reason, "removed after the call") {
		t.Errorf("denials %+v, want one create of %s from %s, removed", got, dotgit, PostCallSource)
	}
	if _, err := os.Lstat(dotgit); !os.IsNotExist(err) {
		t.Errorf("%s survived the check: %v", dotgit, err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "x" {
		t.Errorf("the link's target was touched: %q, %v", b, err)
	}
	if _, err := os.Lstat(codex); !os.IsNotExist(err) {
		t.Errorf("%s exists: %v", codex, err)
	}
}

// TestSweepRenamedRoot: a command that renames its root away and leaves a
// symbolic link to another repository in its place does not get that
// repository's .git removed: the check looks in the directory it watched
// from the start, and removes what appeared there.
func TestSweepRenamedRoot(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	other := filepath.Join(base, "other")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.MkdirAll(filepath.Join(other, ".git"), 0o755))
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := openWatches([]string{filepath.Join(ws, ".git")})
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(base, "moved")
	must(t, os.Mkdir(filepath.Join(ws, ".git"), 0o755))
	must(t, os.Rename(ws, moved))
	must(t, os.Symlink(other, ws))
	got := sweep(pol, w)
	if len(got) != 1 {
		t.Errorf("denials %+v, want one", got)
	}
	if _, err := os.Stat(filepath.Join(other, ".git")); err != nil {
		t.Errorf("the other repository's .git was removed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(moved, ".git")); !os.IsNotExist(err) {
		t.Errorf("the .git made in the watched directory survived: %v", err)
	}
}

// TestSweepHeldPlaceholder: a watched name that is another call's
// placeholder (a call of this process that requires carve-out-create) is
// left to that call, which has it bound read-only: removing it would detach
// the bind mid-call. What was made in it (by the watched call's racing
// thread, to which it is a plain directory) is removed and reported.
func TestSweepHeldPlaceholder(t *testing.T) {
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	dotgit := filepath.Join(ws, ".git")
	made, err := makePlaceholders([]string{dotgit})
	if err != nil || len(made) != 1 {
		t.Fatalf("placeholder: %v %v", made, err)
	}
	defer removePlaceholders(made)
	w, err := openWatches([]string{dotgit})
	if err != nil {
		t.Fatal(err)
	}
	if got := sweep(pol, w); len(got) != 0 {
		t.Errorf("an untouched placeholder reported: %+v", got)
	}
	must(t, os.Mkdir(filepath.Join(dotgit, "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(dotgit, "hooks", "pre-commit"), nil, 0o755))
	if w, err = openWatches([]string{dotgit}); err != nil {
		t.Fatal(err)
	}
	got := sweep(pol, w)
	if len(got) != 1 || !strings.Contains(got[0].Reason, "another call's placeholder") {
		t.Errorf("denials %+v, want one for what was made in the placeholder", got)
	}
	entries, err := os.ReadDir(dotgit)
	if err != nil || len(entries) != 0 {
		t.Errorf("the placeholder: %v entries, %v; want it there, empty", entries, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSweepOthersInSticky: in a sticky directory (/tmp, a writable root of
// every call by default), a watched name another user made is not the
// command's (it holds no CAP_CHOWN or CAP_SETUID): root's sbx leaves it.
func TestSweepOthersInSticky(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: making another user's file needs root")
	}
	sticky := t.TempDir()
	must(t, unix.Chmod(sticky, 0o1777))
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: sticky, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	theirs, mine := filepath.Join(sticky, ".git"), filepath.Join(sticky, ".codex")
	w, err := openWatches([]string{theirs, mine})
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Mkdir(theirs, 0o755))
	must(t, os.Chown(theirs, 65534, 65534))
	must(t, os.Mkdir(mine, 0o755))
	got := sweep(pol, w)
	if len(got) != 1 || got[0].Path != mine {
		t.Errorf("denials %+v, want one, for %s", got, mine)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("another user's %s was removed: %v", theirs, err)
	}
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Errorf("%s survived: %v", mine, err)
	}
}
