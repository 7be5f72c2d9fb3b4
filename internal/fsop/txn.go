package fsop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// change is one file of a patch, computed in memory.
type change struct {
	path    string
	content string
	delete  bool
	exists  bool
	perm    fs.FileMode
	// old is the existing file's, for its owner; oldContent its content,
	// for undoing an in-place write.
	old        fs.FileInfo
	oldContent string
	// inPlace: written in place, not through a temp file and a backup.
	inPlace bool
	// setPerm: perm is the existing file's or the patch's, not a default
	// for the umask to narrow.
	setPerm bool
	// set while staging
	tmp, backup string
	placed      bool
}

// applyPatch applies a unified diff to the files under the working
// directory, all or nothing; o says which files are written in place.
func applyPatch(text string, o Op) error {
	patches, err := ParsePatch(text)
	if err != nil {
		return err
	}
	changes := make([]*change, 0, len(patches))
	for _, p := range patches {
		c, err := compute(p, o)
		if err != nil {
			return err
		}
		changes = append(changes, c)
	}
	t := &txn{changes: changes}
	return t.run()
}

// compute reads the file p changes and works out its new content, touching
// nothing.
func compute(p FilePatch, o Op) (*change, error) {
	c := &change{path: filepath.Clean(p.Path()), delete: p.IsDelete(), perm: 0o644}
	fi, err := os.Lstat(c.path)
	switch {
	case err == nil && p.IsNew():
		return nil, &PatchError{Path: p.Path(), Msg: "already exists, but the patch creates it"}
	case err == nil && !fi.Mode().IsRegular():
		return nil, &PatchError{Path: p.Path(), Msg: "is not a regular file"}
	case err != nil && (!p.IsNew() || !errors.Is(err, fs.ErrNotExist)):
		return nil, err
	}
	old := ""
	if c.exists = err == nil; c.exists {
		c.perm, c.old = fi.Mode().Perm(), fi
		b, err := os.ReadFile(c.path)
		if err != nil {
			return nil, err
		}
		old = string(b)
		c.inPlace = !c.delete && o.replaceModeOf(c.path) == replaceInPlace
	}
	c.oldContent = old
	if p.Mode != 0 {
		c.perm = p.Mode
	}
	c.setPerm = c.exists || p.Mode != 0
	if c.content, err = p.Apply(old); err != nil {
		return nil, err
	}
	if c.delete && c.content != "" {
		return nil, &PatchError{Path: p.Path(), Msg: "the patch deletes the file but does not remove all of its lines"}
	}
	return c, nil
}

// txn stages the changes and commits or undoes them.
type txn struct {
	changes []*change
	// dirs are the directories made for new files, outermost first.
	dirs []string
}

// IMPORTANT: all or nothing holds against errors and denials, not against
// the process being killed (sbx fs --timeout, SIGKILL) between the first
// rename and the last: then some files are changed and temp (.sbx-*.tmp)
// or backup (.sbx-*.bak) files are left beside them.
//
// run stages every change (each new content in a temp file next to its
// target, each existing target moved aside to a backup name), going on
// after a failure so that every refusal is seen at once; then, if all
// staged, renames the temp files into place and removes the backups. On
// any failure it undoes everything done.
func (t *txn) run() error {
	var errs []error
	for _, c := range t.changes {
		if err := t.stage(c); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		for _, c := range t.changes {
			if err := t.place(c); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if len(errs) > 0 {
		t.undo()
		return firstOf(errs)
	}
	for _, c := range t.changes {
		if c.backup != "" {
			if err := os.Remove(c.backup); err != nil {
				errs = append(errs, fmt.Errorf("the patch is applied, but %w", err))
			}
		}
	}
	if len(errs) > 0 {
		return firstOf(errs)
	}
	return nil
}

// firstOf is the first error, saying how many more there were.
func firstOf(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more)", errs[0], len(errs)-1)
}

// stage writes c's temp file and moves its target aside; for a change in
// place it only checks the target may be written.
func (t *txn) stage(c *change) error {
	if c.inPlace {
		return checkWritable(c.path)
	}
	if !c.delete {
		if err := t.mkdirs(filepath.Dir(c.path)); err != nil {
			return err
		}
		f, err := createTemp(c.path, c.perm)
		if err != nil {
			return err
		}
		c.tmp = f.Name()
		var err2 error
		if c.setPerm {
			err2 = f.Chmod(c.perm)
		}
		if c.old != nil {
			keepOwner(f, c.old)
		}
		if err := errors.Join(err2, writeAll(f, c.content), f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	if !c.exists {
		return nil
	}
	if !c.delete {
		if err := checkWritable(c.path); err != nil {
			return err
		}
	}
	backup := sideName(c.path, "bak")
	if err := rename(c.path, backup); err != nil {
		return err
	}
	c.backup = backup
	return nil
}

func writeAll(f *os.File, s string) error {
	_, err := f.WriteString(s)
	return err
}

// mkdirs makes dir and its missing parents, remembering each it made.
func (t *txn) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o777); err != nil {
			return err
		}
		t.dirs = append(t.dirs, missing[i])
	}
	return nil
}

// place renames c's temp file onto its target, or writes it in place.
func (t *txn) place(c *change) error {
	if c.inPlace {
		c.placed = true
		return c.writeInPlace(c.content, c.perm)
	}
	if c.delete {
		return nil
	}
	if err := rename(c.tmp, c.path); err != nil {
		return err
	}
	c.tmp, c.placed = "", true
	return nil
}

// undo puts back what run changed, in reverse order. Its own failures
// cannot be reported any better than by the error that started it.
func (t *txn) undo() {
	for i := len(t.changes) - 1; i >= 0; i-- {
		c := t.changes[i]
		switch {
		case c.inPlace && c.placed:
			c.writeInPlace(c.oldContent, c.old.Mode().Perm())
		case c.backup != "":
			// Over the new content, if it was placed: no moment without
			// the file.
			rename(c.backup, c.path)
		case c.placed:
			os.Remove(c.path)
		}
		if c.tmp != "" {
			os.Remove(c.tmp)
		}
	}
	for i := len(t.dirs) - 1; i >= 0; i-- {
		os.Remove(t.dirs[i])
	}
}

// rename is os.Rename; tests make it fail at a chosen call to check that
// every step is undone.
var rename = os.Rename

// writeInPlace gives c's target content and perm, in place.
func (c *change) writeInPlace(content string, perm fs.FileMode) error {
	return writeInPlace(c.path, func(f *os.File) error {
		if err := writeAll(f, content); err != nil {
			return err
		}
		if c.perm != c.old.Mode().Perm() {
			// The patch changes the mode (or an undo changes it back).
			return f.Chmod(perm)
		}
		return nil
	})
}
