// Package fsop performs the file-system mutations of `sbx fs`: write,
// append, mkdir, remove, move, copy, chmod and apply-patch, with plain
// system calls. It decides nothing about what is allowed: the caller runs
// it inside the sandbox (the hidden `__fs` stage of cmd/sbx), where
// Landlock, the read-only mounts and the denial supervisor see each system
// call exactly as they would see a command's.
//
//	op := fsop.Op{Kind: fsop.Write, Path: "notes.txt"}
//	err := op.Run(strings.NewReader("hello\n"))
//
// Guarantees:
//   - write replaces the file atomically (a temp file in the same
//     directory, fsync, rename) and keeps an existing file's permission
//     bits (and owner, where the user may give it away); a new file gets
//     0644 minus the umask. The files the caller lists in Op.InPlace (its
//     sandbox lets it write them, not create beside them) are truncated
//     and written instead, which is not atomic.
//   - apply-patch is all-or-nothing: every new content is computed in
//     memory first (a hunk that does not apply changes nothing), then
//     staged next to its target (or checked for writing, in place); any
//     failure while staging or committing undoes what was done (an in-place
//     file gets its old content back), so no file is left changed.
//   - Errors are the system call's own (*fs.PathError and friends), or a
//     *PatchError for a patch that is malformed or does not apply; nothing
//     here says whether the sandbox caused them: only the supervisor's
//     evidence can.
//
// Package fsop is pure Go and builds on every OS.
package fsop
