//go:build !linux

package host

import (
	"os"
	"runtime"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// PTY is a pseudo-terminal for one call; only the Linux backend has one.
type PTY struct {
	Master, Slave *os.File
	SlavePath     string
}

func errNoPTY() error {
	return &report.UnsupportedFeatureError{Feature: report.FeaturePTY, Reason: "no pty support for " + runtime.GOOS + " yet"}
}

// OpenPTY is not available on this platform: the call is refused.
func OpenPTY(rows, cols uint16) (*PTY, error) { return nil, errNoPTY() }

// Close closes both ends.
func (p *PTY) Close() {}

// SetSize is not available on this platform.
func SetSize(f *os.File, rows, cols uint16) error { return errNoPTY() }

// Size is not available on this platform.
func Size(f *os.File) (rows, cols uint16, err error) { return 0, 0, errNoPTY() }

// FollowSize does nothing on this platform.
func FollowSize(from, to *os.File, resized <-chan struct{}) (stop func()) { return func() {} }

// MakeRaw is not available on this platform.
func MakeRaw(f *os.File) (restore func(), err error) { return nil, errNoPTY() }
