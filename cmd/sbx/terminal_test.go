package main

import (
	"errors"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestParsePTYSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ptySize
		wantErr bool
	}{
		{in: "24x80", want: ptySize{24, 80}},
		{in: "1x65535", want: ptySize{1, 65535}},
		{in: "0x80", wantErr: true},
		{in: "24x65536", wantErr: true},
		{in: "-1x80", wantErr: true},
		{in: "24", wantErr: true},
		{in: "24X80", wantErr: true},
		{in: "x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parsePTYSize(tt.in)
		var fe *strictjson.FieldError
		switch {
		case tt.wantErr && (!errors.As(err, &fe) || fe.Field != "--pty-size"):
			t.Errorf("parsePTYSize(%q) = %v, want an error naming --pty-size", tt.in, err)
		case !tt.wantErr && (err != nil || got != tt.want):
			t.Errorf("parsePTYSize(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestPTYInput(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "\x04"},
		{"line\n", "line\n\x04"},
		// The first Ctrl-D only ends the unfinished line.
		{"partial", "partial\x04\x04"},
	}
	for _, tt := range tests {
		if got := ptyInput(tt.in); got != tt.want {
			t.Errorf("ptyInput(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
