package fsop

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Kind is an operation of `sbx fs`; the strings are the wire names.
type Kind string

const (
	Write      Kind = "write"       // Path, content from the reader
	Append     Kind = "append"      // Path, content from the reader
	Mkdir      Kind = "mkdir"       // Path, Parents
	Remove     Kind = "remove"      // Path, Recursive
	Move       Kind = "move"        // Path, Dest
	Copy       Kind = "copy"        // Path, Dest, Recursive
	Chmod      Kind = "chmod"       // Path, Mode
	ApplyPatch Kind = "apply-patch" // the unified diff from the reader
)

// Kinds lists every operation, in the order the help shows them.
var Kinds = []Kind{Write, Append, Mkdir, Remove, Move, Copy, Chmod, ApplyPatch}

// Op is one mutation. Relative paths are relative to the process's working
// directory (the call's cwd in the sandbox).
type Op struct {
	Kind Kind   `json:"op"`
	Path string `json:"path,omitempty"`
	// Dest is the new path of move and copy (the path itself, not a
	// directory to put it in).
	Dest string `json:"dest,omitempty"`
	// Mode is chmod's octal mode ("644", "0755").
	Mode string `json:"mode,omitempty"`
	// Parents makes mkdir create missing parents (and accept an existing
	// directory).
	Parents bool `json:"parents,omitempty"`
	// Recursive lets remove take a directory tree and copy copy one.
	Recursive bool `json:"recursive,omitempty"`
	// InPlace are the existing files (absolute, symlinks resolved) that
	// write, copy and apply-patch write in place (truncate, write) instead
	// of replacing them through a temp file beside them: the caller's
	// sandbox lets it write them but not create in their directory (a
	// grant of the file alone, a carve-out), so that the first refusal is
	// the file's own and its retry asks for the file, not the directory.
	// IMPORTANT: such a write is not atomic.
	InPlace []string `json:"in_place,omitempty"`
}

// replaceMode is how an existing file gets its new content.
type replaceMode int

const (
	// replaceAtomic writes a temp file beside it and renames it over.
	replaceAtomic replaceMode = iota
	// replaceInPlace truncates the file and writes it.
	replaceInPlace
)

// replaceModeOf says how o replaces path.
func (o Op) replaceModeOf(path string) replaceMode {
	if len(o.InPlace) == 0 {
		return replaceAtomic
	}
	// Absolute first: the working directory may be named through a
	// symlink ($PWD), and InPlace holds resolved paths.
	abs, err := filepath.Abs(path)
	if err != nil {
		return replaceAtomic
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil && slices.Contains(o.InPlace, r) {
		return replaceInPlace
	}
	return replaceAtomic
}

// ArgError is an Op that cannot run: Field names the argument at fault
// ("path", "dest", "mode", "parents", "recursive", "op").
type ArgError struct {
	Field string
	Err   error
}

func (e *ArgError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *ArgError) Unwrap() error { return e.Err }

// TakesInput says the operation reads its content or patch from the reader.
func (k Kind) TakesInput() bool { return k == Write || k == Append || k == ApplyPatch }

// Validate checks that o names a known operation with the arguments it
// needs and none it does not take.
func (o Op) Validate() error {
	if !slices.Contains(Kinds, o.Kind) {
		return &ArgError{Field: "op", Err: fmt.Errorf("unknown operation %q (known: write, append, mkdir, remove, move, copy, chmod, apply-patch)", o.Kind)}
	}
	needPath := o.Kind != ApplyPatch
	needDest := o.Kind == Move || o.Kind == Copy
	checks := []struct {
		field      string
		set, wants bool
	}{
		{"path", o.Path != "", needPath},
		{"dest", o.Dest != "", needDest},
		{"mode", o.Mode != "", o.Kind == Chmod},
	}
	for _, c := range checks {
		switch {
		case c.wants && !c.set:
			return &ArgError{Field: c.field, Err: fmt.Errorf("required by %s", o.Kind)}
		case c.set && !c.wants:
			return &ArgError{Field: c.field, Err: fmt.Errorf("not taken by %s", o.Kind)}
		}
	}
	for _, c := range []struct{ field, value string }{{"path", o.Path}, {"dest", o.Dest}} {
		if c.value == "" {
			continue // required or not taken: checked above
		}
		if err := strictjson.CheckString(strictjson.KindPath, c.value); err != nil {
			return &ArgError{Field: c.field, Err: err}
		}
		// The change crosses to sbx's fs stage as JSON, which would turn
		// invalid UTF-8 into U+FFFD: `sbx fs write m53$'\xff'` made
		// m53\uFFFD. Refused, not changed (DESIGN.md invariant 9).
		if !utf8.ValidString(c.value) {
			return &ArgError{Field: c.field, Err: strictjson.ErrInvalidUTF8}
		}
	}
	if o.Parents && o.Kind != Mkdir {
		return &ArgError{Field: "parents", Err: fmt.Errorf("only taken by mkdir, not %s", o.Kind)}
	}
	if o.Recursive && o.Kind != Remove && o.Kind != Copy {
		return &ArgError{Field: "recursive", Err: fmt.Errorf("only taken by remove and copy, not %s", o.Kind)}
	}
	if o.Kind == Chmod {
		if _, err := ParseMode(o.Mode); err != nil {
			return &ArgError{Field: "mode", Err: err}
		}
	}
	return nil
}

// ParseMode reads an octal permission mode, 0 to 07777.
func ParseMode(s string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fmt.Errorf("%q is not an octal mode (0 to 7777)", s)
	}
	m := fs.FileMode(n & 0o777)
	for bit, flag := range map[uint64]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if n&bit != 0 {
			m |= flag
		}
	}
	return m, nil
}

// Run performs o, reading the content (write, append) or the patch
// (apply-patch) from in. The error is the system call's, with the path;
// for a patch also a *PatchError.
func (o Op) Run(in io.Reader) error {
	if err := o.Validate(); err != nil {
		return err
	}
	switch o.Kind {
	case Write:
		return writeFile(o.Path, in, 0o644, o.replaceModeOf(o.Path))
	case Append:
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, in)
		return errors.Join(err, f.Close())
	case Mkdir:
		if o.Parents {
			return os.MkdirAll(o.Path, 0o777)
		}
		return os.Mkdir(o.Path, 0o777)
	case Remove:
		return remove(o.Path, o.Recursive)
	case Move:
		return move(o.Path, o.Dest)
	case Copy:
		return copyPath(o.Path, o.Dest, o.Recursive, o.replaceModeOf(o.Dest))
	case Chmod:
		m, _ := ParseMode(o.Mode)
		return os.Chmod(o.Path, m)
	case ApplyPatch:
		b, err := io.ReadAll(in)
		if err != nil {
			return fmt.Errorf("read patch: %w", err)
		}
		return applyPatch(string(b), o)
	}
	return nil
}

// writeFile replaces path with the content of in: a temp file in the same
// directory, fsync, rename. An existing file keeps its permission bits (and,
// where allowed, its owner) and must be writable (the open for writing is what the sandbox and the file
// permissions judge, as for any writer); a new one gets perm minus the
// umask. A symlink is written through: its target is replaced. With
// replaceInPlace an existing file is truncated and written instead.
func writeFile(path string, in io.Reader, perm fs.FileMode, mode replaceMode) error {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	fi, err := os.Stat(path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case exists && !fi.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
	case exists && mode == replaceInPlace:
		return writeInPlace(path, func(f *os.File) error {
			_, err := io.Copy(f, in)
			return err
		})
	}
	// The temp file first: the sandbox judges the directory, which is what
	// a replace needs (so a retry grants the directory).
	tmp, err := createTemp(path, perm)
	if err != nil {
		return err
	}
	err = func() error {
		if exists {
			if err := checkWritable(path); err != nil {
				return err
			}
			if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
				return err
			}
			keepOwner(tmp, fi)
		}
		if _, err := io.Copy(tmp, in); err != nil {
			return err
		}
		return tmp.Sync()
	}()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// writeInPlace opens path for writing, truncated (what the sandbox and the
// file permissions judge), lets fill write it, and syncs it.
func writeInPlace(path string, fill func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return asWrite(path, err)
	}
	return errors.Join(fill(f), f.Sync(), f.Close())
}

// createTemp makes an empty file next to path, named after it. Its error
// names path, the file the caller asked to write, with the errno of the
// temp file's open.
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	for {
		f, err := os.OpenFile(sideName(path, "tmp"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, asWrite(path, err)
	}
}

// sideName is a fresh hidden name in path's directory: .NAME.sbx-RANDOM.KIND
func sideName(path, kind string) string {
	// Unguessable is not needed (O_EXCL retries a taken name), and
	// crypto/rand would add the whole crypto tree to every sbx start.
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".sbx-"+strconv.FormatUint(rand.Uint64()>>16, 16)+"."+kind)
}

// checkWritable opens path for writing without truncating it and writes
// nothing: the same judgement (sandbox, then file permissions) a writer of
// the file meets.
func checkWritable(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return asWrite(path, err)
	}
	return f.Close()
}

// asWrite is err, when it is a path error, as "write PATH: ERRNO": the
// caller's path and operation, whatever file the open was of.
func asWrite(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: "write", Path: path, Err: pe.Err}
	}
	return err
}

// remove removes a file or an empty directory, or with recursive a tree. A
// missing path is an error in both cases.
func remove(path string, recursive bool) error {
	if !recursive {
		return os.Remove(path)
	}
	if _, err := os.Lstat(path); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: errors.Unwrap(err)}
	}
	return os.RemoveAll(path)
}

// move renames src to dst. Across file systems (EXDEV) a regular file is
// copied and the source removed, as mv does.
func move(src, dst string) error {
	err := os.Rename(src, dst)
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(le.Err, syscall.EXDEV) {
		return err
	}
	if fi, serr := os.Lstat(src); serr != nil || !fi.Mode().IsRegular() {
		return err
	}
	if err := copyFile(src, dst, replaceAtomic); err != nil {
		return err
	}
	return os.Remove(src)
}

// copyPath copies a file (replacing dst like write does) or, with
// recursive, a directory tree to a dst that must not exist yet.
func copyPath(src, dst string, recursive bool, mode replaceMode) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, mode)
	}
	if !recursive {
		return &fs.PathError{Op: "copy", Path: src, Err: errors.New("is a directory (copy -r copies a tree)")}
	}
	if _, err := os.Lstat(dst); err == nil {
		return &fs.PathError{Op: "copy", Path: dst, Err: fs.ErrExist}
	}
	if err := copyTree(src, dst); err != nil {
		// Only what this copy made: dst did not exist before.
		if _, serr := os.Lstat(dst); serr == nil {
			os.RemoveAll(dst)
		}
		return err
	}
	return nil
}

func copyFile(src, dst string, mode replaceMode) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "copy", Path: src, Err: errors.New("not a regular file")}
	}
	if dfi, err := os.Stat(dst); err == nil && os.SameFile(fi, dfi) {
		return &fs.PathError{Op: "copy", Path: dst, Err: errors.New("is the source file itself")}
	}
	return writeFile(dst, f, fi.Mode().Perm(), mode)
}

// copyTree copies the tree at src to a new dst: directories, regular files
// and symlinks (as links), with their permission bits minus the umask.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err == nil {
				err = os.Symlink(target, to)
			}
			return err
		case d.Type().IsRegular():
			return copyNew(p, to, info.Mode().Perm())
		}
		return &fs.PathError{Op: "copy", Path: p, Err: errors.New("not a file, directory or symlink")}
	})
}

// copyNew copies src to a new file dst.
func copyNew(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
