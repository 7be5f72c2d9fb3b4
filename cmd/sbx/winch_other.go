//go:build !linux

package main

// windowChanges never fires where sbx has no pty (host.FollowSize does
// nothing there).
func windowChanges() (resized <-chan struct{}, stop func()) { return nil, func() {} }
