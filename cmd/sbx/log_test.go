package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogSpec: show and verify are in the CLI spec (man pages, completions)
// with their --json.
func TestLogSpec(t *testing.T) {
	cmds, err := cliCommands()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if c.Name != "log" {
			continue
		}
		if len(c.Subcommands) != 2 || c.Subcommands[0].Name != "log show" || c.Subcommands[1].Name != "log verify" {
			t.Fatalf("log subcommands = %+v", c.Subcommands)
		}
		for _, s := range c.Subcommands {
			if len(s.Flags) != 1 || s.Flags[0].Name != "json" {
				t.Errorf("%s flags = %+v, want --json", s.Name, s.Flags)
			}
		}
		return
	}
	t.Fatal("no log in the spec")
}

// docFrame frames payload as docs/log.md describes it, written out here
// independently of the journal package so that the format stays as
// documented.
func docFrame(payload string) []byte {
	c := crc32.MakeTable(crc32.Castagnoli)
	h := make([]byte, 20)
	copy(h, "SBXJ")
	h[4] = 1
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum([]byte(payload), c))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], c))
	return append(h, payload...)
}

// TestLogVerifyDocumentedFormat: a log written by hand in the documented
// format verifies; an approval/decided without its approval/asked in it is
// rejected (exit 1), and the records after it still count.
func TestLogVerifyDocumentedFormat(t *testing.T) {
	rec := func(seq int, typ, data string) string {
		return fmt.Sprintf(`{"type":%q,"session_id":"s","time":"2026-12-04T04:00:0%dZ","data":%s,"seq":%d}`, typ, seq, data, seq)
	}
	good := [][]byte{
		docFrame(rec(1, "session/opened", `{}`)),
		docFrame(rec(2, "turn/begun", `{"turn_id":"t"}`)),
	}
	bad := docFrame(rec(3, "approval/decided", `{"approval_id":"a","outcome":"allowed-once"}`))
	after := docFrame(rec(4, "turn/ended", `{"turn_id":"t"}`))
	for _, tc := range []struct {
		name   string
		frames [][]byte
		code   int
		want   string
	}{
		{"good", good, 0, ": 1 session, 2 records: ok\n"},
		{"decided-without-asked", append(append(good, bad), after), 1, `: 1 session, 3 records: 1 problem
problem: `},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.log"), bytes.Join(tc.frames, nil), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb strings.Builder
		code := Main([]string{"log", "verify", dir}, Stdio{Out: &out, Err: &errb})
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d, %q %q; want %d, %q", tc.name, code, out.String(), errb.String(), tc.code, tc.want)
		}
		if tc.code == 1 && !strings.Contains(out.String(), `(seq 3): rejected: approval/decided: approval "a" was never asked`) {
			t.Errorf("%s: %s", tc.name, out.String())
		}
	}
}
