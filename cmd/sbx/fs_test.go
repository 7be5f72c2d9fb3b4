package main

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

func TestParseFSArgs(t *testing.T) {
	tests := []struct {
		args []string
		want fsop.Op
	}{
		{[]string{"write", "f"}, fsop.Op{Kind: fsop.Write, Path: "f"}},
		{[]string{"append", "-"}, fsop.Op{Kind: fsop.Append, Path: "-"}},
		{[]string{"mkdir", "-p", "a/b"}, fsop.Op{Kind: fsop.Mkdir, Path: "a/b", Parents: true}},
		{[]string{"mkdir", "a/b", "--parents"}, fsop.Op{Kind: fsop.Mkdir, Path: "a/b", Parents: true}},
		{[]string{"remove", "-r", "--", "-dir"}, fsop.Op{Kind: fsop.Remove, Path: "-dir", Recursive: true}},
		{[]string{"move", "a", "b"}, fsop.Op{Kind: fsop.Move, Path: "a", Dest: "b"}},
		{[]string{"copy", "--recursive", "a", "b"}, fsop.Op{Kind: fsop.Copy, Path: "a", Dest: "b", Recursive: true}},
		{[]string{"chmod", "0755", "run.sh"}, fsop.Op{Kind: fsop.Chmod, Path: "run.sh", Mode: "0755"}},
		{[]string{"apply-patch"}, fsop.Op{Kind: fsop.ApplyPatch}},
	}
	for _, tt := range tests {
		got, err := parseFSArgs(tt.args)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
}

// TestFSRetryArgv: the retry of sbx fs is the same sbx fs command line,
// flags first, the escalation added, the operation after --.
func TestFSRetryArgv(t *testing.T) {
	with, empty := profiles.WithAdditionalPermissions, ""
	out := profiles.New(nil, nil, []string{"/out"})
	r := escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &out, Justification: &empty}
	for _, tt := range []struct{ args, want string }{
		{"--mode workspace-write --json remove -r /out/d",
			"sbx fs --mode workspace-write --json --sandbox-permissions with_additional_permissions --allow-write /out --justification '' -- remove -r /out/d"},
		{"--cwd /w -- write -f",
			"sbx fs --cwd /w --sandbox-permissions with_additional_permissions --allow-write /out --justification '' -- write -f"},
	} {
		fs := flag.NewFlagSet("fs", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var rf runFlags
		rf.register(fs)
		fs.Bool("json", false, "")
		args := splitShell(tt.args)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if got := shellJoin(retryCommandLine("fs", fs, args).Argv(r, profiles.Profile{})); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}
