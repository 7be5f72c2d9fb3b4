//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestStageStatus: the stage's message on its status pipe is believed only
// when it agrees with the stage's exit, which sbx reaps from the kernel; a
// forged, extra, malformed or missing message is sbx's error, never the
// command's result (issue 27 §3).
func TestStageStatus(t *testing.T) {
	exited := func(c int) syscall.WaitStatus { return syscall.WaitStatus(c << 8) }
	msg := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	const sigkill = uint32(syscall.SIGKILL)
	tests := []struct {
		name    string
		stage   syscall.WaitStatus // the stage's own exit, as sbx reaps it
		pipe    []byte
		want    syscall.WaitStatus // the command's, when no error
		wantErr error              // nil: res.err stays nil
	}{
		{"exit 3", exited(3), msg(3 << 8), exited(3), nil},
		{"exit 0", exited(0), msg(0), exited(0), nil},
		{"killed by SIGKILL", exited(128 + 9), msg(sigkill), syscall.WaitStatus(sigkill), nil},
		{"exec failed", exited(127), msg(stageExecFailed, uint32(syscall.ENOENT)), exited(127), ErrStart},
		{"no mounts", exited(125), msg(stageNoMounts, uint32(syscall.EPERM)), exited(125), ErrUserNS},
		{"setup failed before the fork", exited(125), nil, exited(125), nil},
		{"sbx killed the stage", syscall.WaitStatus(sigkill), msg(0), syscall.WaitStatus(sigkill), nil},
		// The forgeries of issue 27: a status or a marker written ahead of
		// the stage's, by a command that reached the pipe.
		{"forged exit 0 ahead of exit 3", exited(3), msg(0, 3<<8), 0, errStageStatus},
		{"forged exit 0, stage's drained", exited(3), msg(0), 0, errStageStatus},
		{"forged exec failure", exited(0), msg(stageExecFailed, uint32(syscall.ENOENT), 0), 0, errStageStatus},
		{"forged exec failure alone", exited(0), msg(stageExecFailed, uint32(syscall.ENOENT)), 0, errStageStatus},
		{"stage crashed after the fork", exited(2), nil, 0, errStageStatus},
		{"not a wait status", exited(0), msg(0x10000), 0, errStageStatus},
		{"stopped is no end", exited(0), msg(0x7F), 0, errStageStatus},
		{"half a marker", exited(127), msg(stageExecFailed), 0, errStageStatus},
		{"marker with the wrong exit", exited(126), msg(stageExecFailed, uint32(syscall.ENOENT)), 0, errStageStatus},
		{"torn message", exited(0), []byte{0, 0}, 0, errStageStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if len(tt.pipe) > 0 {
				if _, err := w.Write(tt.pipe); err != nil {
					t.Fatal(err)
				}
			}
			// The writer stays open: a copy held elsewhere must not make
			// stageStatus wait.
			defer w.Close()
			res := exitResult{status: tt.stage}
			stageStatus(r, &res, "cmd")
			if tt.wantErr == nil {
				if res.err != nil || res.status != tt.want {
					t.Fatalf("status %#x, err %v; want %#x, no error", res.status, res.err, tt.want)
				}
				return
			}
			if !errors.Is(res.err, tt.wantErr) {
				t.Fatalf("status %#x, err %v; want %v", res.status, res.err, tt.wantErr)
			}
			if tt.wantErr == errStageStatus && (errors.Is(res.err, ErrStart) || errors.Is(res.err, ErrUserNS)) {
				t.Fatalf("err %v: a forgery must not pass for a start failure or fall back", res.err)
			}
		})
	}
}

// TestStageExitCode: the stage's exit code for each message agrees with
// stageStatus's check, and every valid wait status has one.
func TestStageExitCode(t *testing.T) {
	for _, tt := range []struct {
		msg   uint32
		errno syscall.Errno
		want  int
	}{
		{0, 0, 0}, {3 << 8, 0, 3}, {255 << 8, 0, 255}, {9, 0, 137}, {0x80 | 11, 0, 139},
		{stageExecFailed, syscall.ENOENT, 127}, {stageExecFailed, syscall.EACCES, 126}, {stageNoMounts, syscall.EPERM, 125},
	} {
		if got := stageExitCode(tt.msg, tt.errno); got != tt.want {
			t.Errorf("stageExitCode(%#x, %v) = %d, want %d", tt.msg, tt.errno, got, tt.want)
		}
	}
}
