package main

import (
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/fsop"
	"github.com/sbx-sandbox/sbx/profiles"
)

// execFSRequest is the "fs" object of an `sbx exec` request: the change
// `sbx fs` makes from its arguments and stdin
// (docs/schema/exec-request.schema.json, $defs/fs).
type execFSRequest struct {
	Op        fsop.Kind `json:"op"`
	Path      string    `json:"path"`
	Dest      string    `json:"dest"`
	Mode      string    `json:"mode"`
	Parents   bool      `json:"parents"`
	Recursive bool      `json:"recursive"`
	// Content is what write writes and append appends.
	Content *string `json:"content"`
	// Patch is the unified diff of apply-patch.
	Patch *string `json:"patch"`
}

// op validates the object and returns the change and its input. Errors
// name the field ("fs.dest").
func (f execFSRequest) op() (fsop.Op, string, error) {
	op := fsop.Op{Kind: f.Op, Path: f.Path, Dest: f.Dest, Mode: f.Mode, Parents: f.Parents, Recursive: f.Recursive}
	var ae *fsop.ArgError
	if err := op.Validate(); errors.As(err, &ae) {
		return op, "", &profiles.FieldError{Field: "fs." + ae.Field, Err: ae.Err}
	} else if err != nil {
		return op, "", &profiles.FieldError{Field: "fs", Err: err}
	}
	inputs := []struct {
		field string
		value *string
		wants bool
	}{
		{"content", f.Content, op.Kind == fsop.Write || op.Kind == fsop.Append},
		{"patch", f.Patch, op.Kind == fsop.ApplyPatch},
	}
	input := ""
	for _, in := range inputs {
		switch {
		case in.wants && in.value == nil:
			return op, "", &profiles.FieldError{Field: "fs." + in.field, Err: fmt.Errorf("required by %s", op.Kind)}
		case !in.wants && in.value != nil:
			return op, "", &profiles.FieldError{Field: "fs." + in.field, Err: fmt.Errorf("not taken by %s", op.Kind)}
		case in.wants:
			input = *in.value
		}
	}
	return op, input, nil
}

// checkFS refuses the request fields an "fs" request does not go with:
// it runs no command, and its input is fs.content or fs.patch.
func (req execRequest) checkFS() error {
	if req.FS == nil {
		return nil
	}
	others := []struct {
		field string
		set   bool
	}{
		{"command", req.Command != nil}, {"shell", req.Shell != nil}, {"stdin", req.Stdin != nil},
		{"pty", req.PTY != nil}, {"stream", req.Stream},
	}
	for _, o := range others {
		if o.set {
			return &profiles.FieldError{Field: o.field, Err: errors.New(`not taken with "fs" (a request runs a command or makes one file-system change)`)}
		}
	}
	return nil
}

// execFS runs the "fs" request: the result is `sbx fs --json`'s, with the
// retry as an `sbx exec` request.
func execFS(stdio Stdio, req execRequest, r call.Request, raw []byte) int {
	op, input, err := req.FS.op()
	if err != nil {
		return execRefuse(stdio, err)
	}
	r.Escalation.Tool = "fs"
	res, err := runFS(r, op, input, call.RetryForm{Request: raw})
	if err != nil {
		return execRefuse(stdio, err)
	}
	res.CallID = req.CallID
	return writeJSON(stdio.Out, res)
}
