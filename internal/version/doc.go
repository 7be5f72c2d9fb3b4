// Package version says which sbx this is: the version, the commit, the Go
// version and the build date.
//
// A release build sets them with the linker:
//
//	go build -trimpath -ldflags "-X github.com/sbx-sandbox/sbx/internal/version.Version=0.1.0 \
//	    -X github.com/sbx-sandbox/sbx/internal/version.Commit=$(git rev-parse HEAD) \
//	    -X github.com/sbx-sandbox/sbx/internal/version.Date=2026-12-04T00:00:00Z" ./cmd/sbx
//
// (the package path follows the module path). Any other build (go build in a
// clone, go install module@version) reports what the Go toolchain recorded in
// the binary instead: the module version and the vcs.revision, vcs.time and
// vcs.modified settings. Get never fails: a field nobody recorded is empty,
// and the version is then "devel", never a made-up number.
package version
