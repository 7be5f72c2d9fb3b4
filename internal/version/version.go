package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by release builds with -ldflags "-X github.com/sbx-sandbox/sbx/internal/version.Version=...": plain
// strings, because -X can set only those. Empty means "not set", and Get
// falls back to the build information.
var (
	// Version is the release version, with or without a leading v.
	Version string
	// Commit is the full commit hash the release was built from.
	Commit string
	// Date is the build date, RFC 3339 (a release uses the commit's date so
	// that two builds of one commit are identical).
	Date string
)

// Source values say where Info came from.
const (
	SourceLdflags   = "ldflags"
	SourceBuildInfo = "buildinfo"
	SourceNone      = "none"
)

// Info is one build's identity; the JSON field names are those of
// `sbx version --json`.
type Info struct {
	// Version is without a leading v ("0.1.0"), or "devel" when nothing
	// recorded one.
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Modified says the commit's tree had uncommitted changes (vcs.modified).
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Date      string `json:"date,omitempty"`
	// Source is SourceLdflags, SourceBuildInfo or SourceNone.
	Source string `json:"source"`
}

// Devel is the version of a build that recorded none.
const Devel = "devel"

// Get returns this binary's Info.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return resolve(Version, Commit, Date, bi)
}

// resolve is Get with its inputs given: the -X values win field by field (a
// release may set only the version), and the build information fills in the
// rest.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{GoVersion: runtime.Version(), Source: SourceNone}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		// "(devel)" is what go build in a clone records for the main
		// module before Go 1.24, and what it still records without VCS
		// information: not a version.
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = strings.TrimPrefix(v, "v")
			info.Source = SourceBuildInfo
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
				info.Source = SourceBuildInfo
			case "vcs.time":
				info.Date = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if version != "" || commit != "" || date != "" {
		info.Source = SourceLdflags
	}
	if version != "" {
		info.Version = strings.TrimPrefix(version, "v")
	}
	if commit != "" {
		info.Commit = commit
		// The release build names its commit; the tree state recorded by
		// the toolchain is about the same checkout, so it stays.
	}
	if date != "" {
		info.Date = date
	}
	if info.Version == "" {
		info.Version = Devel
	}
	return info
}

// String is the one line of `sbx --version`:
// "sbx 0.1.0 (commit 0123abcd, 2026-12-04T00:00:00Z, go1.26.8)".
func (i Info) String() string {
	var parts []string
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-modified"
		}
		parts = append(parts, "commit "+c)
	}
	if i.Date != "" {
		parts = append(parts, i.Date)
	}
	parts = append(parts, i.GoVersion)
	return fmt.Sprintf("sbx %s (%s)", i.Version, strings.Join(parts, ", "))
}
