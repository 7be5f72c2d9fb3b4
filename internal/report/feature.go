package report

import (
	"slices"

	"github.com/sbx-sandbox/sbx/internal/landlock"
)

// Feature names one thing a backend enforces. A feature a backend could not
// apply is the Feature of a Downgrade; --require and the exec request's
// "require" name the ones a call must not run without. Typed, so a
// misspelt name is a compile error rather than a --require that never
// matches.
type Feature string

// The features a call can require (Features lists them for --require).
const (
	// The Landlock features are spelt once, in the table of Landlock
	// ABIs (internal/landlock), whose rows they stand for.
	FeatureLandlock            Feature = landlock.FeatureLandlock
	FeatureLandlockRefer       Feature = landlock.FeatureRefer
	FeatureLandlockTruncate    Feature = landlock.FeatureTruncate
	FeatureLandlockScope       Feature = landlock.FeatureScope
	FeatureLandlockResolveUnix Feature = landlock.FeatureResolveUnix
	FeatureNetNS               Feature = "netns"
	FeatureMountNS             Feature = "mountns"
	FeaturePIDNS               Feature = "pidns"
	FeatureMask                Feature = "mask"
	FeatureCarveOutCreate      Feature = "carve-out-create"
	FeatureSeccomp             Feature = "seccomp"
	FeatureDenialReports       Feature = "denial-reports"
	FeatureLimits              Feature = "limits"
	// FeatureFileAttributes (Linux): chmod, chown, utimes and xattrs, which
	// Landlock cannot restrict.
	FeatureFileAttributes Feature = "file-attributes"
	// FeatureProcfs (Linux): a /proc of the call's own PID namespace (else
	// the host's).
	FeatureProcfs Feature = "procfs"
	// FeatureMaskLinks (Linux): the masked files have no other names (hard
	// links) than the masked paths; a mount covers a path, not a file.
	FeatureMaskLinks Feature = "mask-links"
	// FeatureNetworkDomains: network by domain (allowed_domains), through
	// the proxy in the call's own network namespace.
	FeatureNetworkDomains Feature = "network-domains"
	// FeatureEveryoneWritable (Windows): paths whose ACL lets Everyone
	// write stay writable.
	FeatureEveryoneWritable Feature = "everyone-writable"
	// FeatureParentDeathKill (macOS): no parent-death signal, so the tree
	// outlives a killed sbx.
	FeatureParentDeathKill Feature = "parent-death-kill"
	// FeatureDenyGlobCreate, FeatureDenyGlobScan: deny patterns (deny_read,
	// deny_write with globs): a name matching one that is created during
	// the call (best effort at most: the supervisor), and a pattern whose
	// existing matches were not all found (the walk's bound).
	FeatureDenyGlobCreate Feature = "deny-glob-create"
	FeatureDenyGlobScan   Feature = "deny-glob-scan"
	// FeatureRootAccess (Linux): every writable root is writable with the
	// command's own credentials, which hold no capability (root's command
	// over a volume another uid owns is refused by file permissions).
	FeatureRootAccess Feature = "writable-root-access"
)

// Features that only an UnsupportedFeatureError names: a whole backend or
// facility this build or platform lacks. No call can require them; a call
// that needs them is refused whatever it asked.
const (
	FeatureSandbox Feature = "sandbox"
	FeaturePTY     Feature = "pty"
	// FeatureServerUserNS: the user namespace an unprivileged sbx serve
	// makes at start-up to launch its calls from a thread (without it,
	// each call has a stage, as sbx run's).
	FeatureServerUserNS Feature = "server-user-namespace"
)

// Features that only `sbx doctor` names (a Check): what this system offers
// or lacks, which no single call downgrades or requires.
const (
	// FeatureLandlockNet, FeatureLandlockIoctlDev, FeatureLandlockAudit:
	// Landlock ABIs 4, 5 and 7 (internal/landlock).
	FeatureLandlockNet      Feature = landlock.FeatureNet
	FeatureLandlockIoctlDev Feature = landlock.FeatureIoctlDev
	FeatureLandlockAudit    Feature = landlock.FeatureAudit
	// FeaturePrivileged (Linux): CAP_SYS_ADMIN, so namespaces are made by
	// the launcher thread, without a stage.
	FeaturePrivileged Feature = "privileged"
	// FeatureUserNS (Linux): unprivileged user namespaces.
	FeatureUserNS Feature = "userns"
	// FeatureCgroups (Linux): a cgroup file system for the limits.
	FeatureCgroups Feature = "cgroups"
	// FeatureMacOS, FeatureSandboxExec, FeatureSeatbeltProfile (macOS):
	// the release, sandbox-exec, and the generated profile working.
	FeatureMacOS           Feature = "macos"
	FeatureSandboxExec     Feature = "sandbox-exec"
	FeatureSeatbeltProfile Feature = "seatbelt-profile"
	// FeatureJob, FeatureRestrictedToken (Windows): the job object and the
	// restricted token a call runs under.
	FeatureJob             Feature = "job"
	FeatureRestrictedToken Feature = "restricted-token"
)

// Features are the names --require accepts, in the order --help lists them.
var Features = []Feature{
	FeatureLandlock, FeatureLandlockRefer, FeatureLandlockTruncate, FeatureLandlockScope, FeatureLandlockResolveUnix,
	FeatureNetNS, FeatureMountNS, FeaturePIDNS, FeatureMask, FeatureCarveOutCreate, FeatureSeccomp,
	FeatureDenialReports, FeatureLimits, FeatureFileAttributes, FeatureProcfs, FeatureMaskLinks,
	FeatureNetworkDomains, FeatureEveryoneWritable, FeatureParentDeathKill,
	FeatureDenyGlobCreate, FeatureDenyGlobScan, FeatureRootAccess,
}

// FeatureNames are Features as strings, for --help, completion and errors.
func FeatureNames() []string {
	out := make([]string, len(Features))
	for i, f := range Features {
		out[i] = string(f)
	}
	return out
}

// ParseFeature returns the requirable feature named s, or false.
func ParseFeature(s string) (Feature, bool) {
	f := Feature(s)
	return f, slices.Contains(Features, f)
}

// minimumLinux is the first Linux release with each feature whose presence
// the kernel's version alone decides: the Landlock ABIs, from their table
// (internal/landlock). Only a requirable feature reaches an
// UnsupportedFeatureError, so only those are here. The others also hang on
// the configuration (namespaces, the LSM list, a container's seccomp
// profile), so a version would mislead.
var minimumLinux = landlockMinimums()

func landlockMinimums() map[Feature]string {
	m := map[Feature]string{}
	for _, f := range Features {
		if min := landlock.Minimum(string(f)); min != "" {
			m[f] = min
		}
	}
	return m
}

// MinimumLinux is the first Linux that has f ("Linux 5.19, Landlock ABI
// 2"), or "" where no kernel version alone decides it.
func (f Feature) MinimumLinux() string { return minimumLinux[f] }

// CheckRequired returns an UnsupportedFeatureError for the first required
// feature that was downgraded.
func CheckRequired(required []Feature, downgrades []Downgrade) error {
	for _, r := range required {
		for _, d := range downgrades {
			if d.Feature == r {
				return &UnsupportedFeatureError{Feature: r, Reason: d.Reason}
			}
		}
	}
	return nil
}
