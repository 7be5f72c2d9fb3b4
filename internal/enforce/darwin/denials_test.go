package darwin

import (
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/report"
)

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    string
		want   report.Denial
		wantOK bool
	}{
		{
			name:   "file write",
			msg:    "Sandbox: touch(4242) deny(1) file-write-create /private/etc/x",
			want:   report.Denial{Operation: "file-write-create", Path: "/private/etc/x", PID: 4242, Count: 1},
			wantOK: true,
		},
		{
			name:   "path with spaces and a folded count",
			msg:    "Sandbox: bash(17) deny(3) file-write-data /Users/dev/My Files/a.txt",
			want:   report.Denial{Operation: "file-write-data", Path: "/Users/dev/My Files/a.txt", PID: 17, Count: 3},
			wantOK: true,
		},
		{
			name:   "process name with parentheses",
			msg:    "Sandbox: node (worker)(900) deny(1) file-read-data /Users/dev/.ssh/id_ed25519",
			want:   report.Denial{Operation: "file-read-data", Path: "/Users/dev/.ssh/id_ed25519", PID: 900, Count: 1},
			wantOK: true,
		},
		{
			name:   "tcp connect",
			msg:    "Sandbox: curl(55) deny(1) network-outbound 93.184.216.34:443",
			want:   report.Denial{Operation: "network-outbound", Address: &report.Address{Family: "inet", Address: "93.184.216.34", Port: 443}, PID: 55, Count: 1},
			wantOK: true,
		},
		{
			name:   "ipv6 connect",
			msg:    "Sandbox: python3.12(56) deny(1) network-outbound [::1]:8080",
			want:   report.Denial{Operation: "network-outbound", Address: &report.Address{Family: "inet6", Address: "::1", Port: 8080}, PID: 56, Count: 1},
			wantOK: true,
		},
		{
			name:   "unix socket",
			msg:    "Sandbox: git(57) deny(1) network-outbound /private/var/run/mDNSResponder",
			want:   report.Denial{Operation: "network-outbound", Address: &report.Address{Family: "unix", Address: "/private/var/run/mDNSResponder"}, PID: 57, Count: 1},
			wantOK: true,
		},
		{
			name:   "mach lookup",
			msg:    "Sandbox: gh(58) deny(1) mach-lookup com.apple.trustd.agent",
			want:   report.Denial{Operation: "mach-lookup", Reason: "com.apple.trustd.agent", PID: 58, Count: 1},
			wantOK: true,
		},
		{
			name:   "no target",
			msg:    "Sandbox: sh(59) deny(1) process-fork",
			want:   report.Denial{Operation: "process-fork", PID: 59, Count: 1},
			wantOK: true,
		},
		{name: "allow report", msg: "Sandbox: sh(59) allow file-read-data /etc/passwd"},
		{name: "other message", msg: "Sandbox: 1 duplicate report for sh deny(1) file-write-data /x"},
		{name: "empty", msg: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseMessage(tc.msg)
			if ok != tc.wantOK {
				t.Fatalf("ParseMessage(%q) ok = %t, want %t", tc.msg, ok, tc.wantOK)
			}
			if !ok {
				return
			}
			tc.want.Source, tc.want.Confidence = DenialSource, DenialConfidence
			if !reflect.DeepEqual(got.Denial, tc.want) {
				t.Errorf("ParseMessage(%q)\n got %+v\nwant %+v", tc.msg, got.Denial, tc.want)
			}
		})
	}
}

func TestParseLogLine(t *testing.T) {
	// Shape of `log stream --style ndjson` output (fields trimmed).
	line := `{"timestamp":"2025-01-02 10:11:12.345678+0100","messageType":"Error","eventType":"logEvent","processID":0,"processImagePath":"/kernel","senderImagePath":"/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox","subsystem":"","category":"","eventMessage":"Sandbox: touch(4242) deny(1) file-write-create /Users/dev/proj/.git/x"}`
	got, ok := ParseLogLine([]byte(line))
	if !ok || got.Process != "touch" || got.Denial.PID != 4242 || got.Denial.Path != "/Users/dev/proj/.git/x" {
		t.Errorf("ParseLogLine = %+v, %t", got, ok)
	}
	for _, bad := range []string{
		`Filtering the log data using "sender == "Sandbox""`,
		`{"eventMessage":"kernel: something else"}`,
		`{"eventMessage":`,
	} {
		if _, ok := ParseLogLine([]byte(bad)); ok {
			t.Errorf("ParseLogLine(%q) ok, want ignored", bad)
		}
	}
}

func TestDenials(t *testing.T) {
	parse := func(msg string) LoggedDenial {
		l, ok := ParseMessage(msg)
		if !ok {
			t.Fatalf("ParseMessage(%q) failed", msg)
		}
		return l
	}
	pol := workspaceWrite()
	pol.WriteRoots = []string{proj, "/private/tmp"}
	pol.Masked = []string{home + "/.ssh"}
	logged := []LoggedDenial{
		parse("Sandbox: touch(10) deny(1) file-write-create /Users/dev/proj/.git/x"),
		parse("Sandbox: other(99) deny(1) file-write-create /Users/dev/elsewhere"),
		parse("Sandbox: touch(11) deny(2) file-write-create /Users/dev/proj/.git/x"),
		parse("Sandbox: sh(10) deny(1) file-write-data /private/etc/hosts"),
		parse("Sandbox: cat(10) deny(1) file-read-data /Users/dev/.ssh/id_ed25519"),
		parse("Sandbox: curl(12) deny(1) network-outbound 1.2.3.4:443"),
		parse("Sandbox: curl(12) deny(1) network-outbound 1.2.3.4:80"),
		parse("Sandbox: gh(12) deny(1) mach-lookup com.apple.trustd.agent"),
	}
	got, dropped := Denials(logged, map[int]bool{10: true, 11: true, 12: true}, pol)
	want := []struct {
		op, path, reason string
		count            int
	}{
		{"create", "/Users/dev/proj/.git/x", "inside the read-only carve-out /Users/dev/proj/.git (seatbelt file-write-create)", 3},
		{"write", "/private/etc/hosts", "outside the writable roots (seatbelt file-write-data)", 1},
		{"read", "/Users/dev/.ssh/id_ed25519", "inside /Users/dev/.ssh, which the guard hides (seatbelt file-read-data)", 1},
		{"connect", "", "network is off (seatbelt network-outbound)", 1},
		{"connect", "", "network is off (seatbelt network-outbound)", 1},
		{"mach-lookup", "", "com.apple.trustd.agent", 1},
	}
	if dropped != 0 || len(got) != len(want) {
		t.Fatalf("Denials = %d entries, %d dropped, want %d, 0 (pid 99 is not ours; repeats fold): %+v", len(got), dropped, len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Operation != w.op || g.Path != w.path || g.Reason != w.reason || g.Count != w.count ||
			g.Source != DenialSource || g.Confidence != DenialConfidence {
			t.Errorf("denial %d = %+v\nwant %+v", i, g, w)
		}
	}
	if got[0].PID != 10 {
		t.Errorf("folded denial keeps pid %d, want the first (10)", got[0].PID)
	}
	if got[3].Address.Port != 443 || got[4].Address.Port != 80 {
		t.Errorf("different ports must stay apart: %+v %+v", got[3].Address, got[4].Address)
	}
	if empty, _ := Denials(logged, map[int]bool{}, pol); empty == nil || len(empty) != 0 {
		t.Errorf("Denials with no pids = %#v, want an empty, non-nil list", empty)
	}
}
