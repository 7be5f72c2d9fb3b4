package landlock

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the ruleset field a right belongs to.
type Kind int

const (
	// FS rights are handled_access_fs, granted by path_beneath rules.
	FS Kind = iota
	// Net rights are handled_access_net, granted by port rules (sbx makes
	// none: a handled network right is denied on every port).
	Net
	// Scope bits are the ruleset's scoped field; no rule grants them.
	Scope
)

// prefix is the uapi spelling of a right's constant before its name.
func (k Kind) prefix() string {
	return [...]string{FS: "LANDLOCK_ACCESS_FS_", Net: "LANDLOCK_ACCESS_NET_", Scope: "LANDLOCK_SCOPE_"}[k]
}

// When says on which rulesets sbx handles a right (a handled right is
// denied wherever no rule grants it).
type When int

const (
	// Always: every ruleset of an ABI that has the right.
	Always When = iota
	// NetworkOff: only for a call with the network off.
	NetworkOff
	// NoNetNS: only for a call with the network off that has no private
	// network namespace (the namespace is the wall where there is one).
	NoNetNS
	// Unused: never; the Right's Why says what stands in its place.
	Unused
)

// Grant is the set of rules that grant a right, where it is handled.
type Grant uint8

const (
	// ReadRoot: the read roots, and the writable roots (which are read
	// roots too).
	ReadRoot Grant = 1 << iota
	// WriteRoot: the writable roots.
	WriteRoot
	// Device: the device files a shell needs (/dev/null, the terminal).
	Device
)

// Right is one Landlock access right or scope bit.
type Right struct {
	Kind Kind
	// Bit is the kernel's value (include/uapi/linux/landlock.h).
	Bit uint64
	// Name is the uapi name after its prefix, lower case ("read_file"):
	// Plan.String spells masks with it.
	Name string
	// File: sbx grants it on a rule for a non-directory (Landlock accepts
	// only some rights there; the others fail landlock_add_rule).
	File bool
	// Grant are the rules that grant it.
	Grant Grant
	// When is when it is handled.
	When When
	// Why says why a right is granted by no rule or never handled.
	Why string
}

// Const is the right's constant in the uapi and in golang.org/x/sys/unix.
func (r Right) Const() string { return r.Kind.prefix() + strings.ToUpper(r.Name) }

// ABI is one Landlock ABI version and what it adds.
type ABI struct {
	Version int
	// Linux is the first Linux release with it
	// (Documentation/userspace-api/landlock.rst).
	Linux string
	// Rights are the rights and scope bits this version adds.
	Rights []Right
	// Feature is what the version stands for in reports and in `sbx
	// doctor` (report.Feature); "" where sbx uses nothing it adds.
	Feature string
	// Check is doctor's description of the feature; "" for ABI 1, whose
	// line says more (enforce/linux's Doctor).
	Check string
	// Lacking is the downgrade of a call on an older ABI, after "Landlock
	// ABI N: "; "" where no call is downgraded for it.
	Lacking string
	// Supervised is Lacking where the seccomp supervisor narrows the gap
	// to best effort; "" where it does not.
	Supervised string
	// LackingWhen is when a call is downgraded for lacking the version:
	// Always, or NetworkOff (only a call with the network off needs it).
	LackingWhen When
}

// The features the Landlock ABIs stand for. report declares its Feature
// constants from these: one spelling of each.
const (
	FeatureLandlock    = "landlock"
	FeatureRefer       = "landlock-refer"
	FeatureTruncate    = "landlock-truncate"
	FeatureNet         = "landlock-net"
	FeatureIoctlDev    = "landlock-ioctl-dev"
	FeatureScope       = "landlock-scope"
	FeatureAudit       = "landlock-audit"
	FeatureResolveUnix = "landlock-resolve-unix"
)

// ABIs is the table: one row per ABI version, in order, from 1.
var ABIs = []ABI{
	{Version: 1, Linux: "5.13", Feature: FeatureLandlock, Rights: []Right{
		{FS, 1 << 0, "execute", true, ReadRoot, Always, ""},
		{FS, 1 << 1, "write_file", true, WriteRoot | Device, Always, ""},
		{FS, 1 << 2, "read_file", true, ReadRoot | Device, Always, ""},
		{FS, 1 << 3, "read_dir", false, ReadRoot, Always, ""},
		{FS, 1 << 4, "remove_dir", false, WriteRoot, Always, ""},
		{FS, 1 << 5, "remove_file", false, WriteRoot, Always, ""},
		// No rule grants MAKE_CHAR or MAKE_BLOCK: a root caller could
		// otherwise mknod the host's disk inside a writable root and
		// write to it through a path Landlock allows.
		{FS, 1 << 6, "make_char", false, 0, Always, "a device node made inside a writable root (the host's disk) would be writable through a path Landlock allows"},
		{FS, 1 << 7, "make_dir", false, WriteRoot, Always, ""},
		{FS, 1 << 8, "make_reg", false, WriteRoot, Always, ""},
		{FS, 1 << 9, "make_sock", false, WriteRoot, Always, ""},
		{FS, 1 << 10, "make_fifo", false, WriteRoot, Always, ""},
		{FS, 1 << 11, "make_block", false, 0, Always, "a device node made inside a writable root (the host's disk) would be writable through a path Landlock allows"},
		{FS, 1 << 12, "make_sym", false, WriteRoot, Always, ""},
	}},
	{Version: 2, Linux: "5.19", Feature: FeatureRefer,
		Check:   "rename/link across directories inside writable roots",
		Lacking: "renaming or linking files across directories is always denied",
		Rights:  []Right{{FS, 1 << 13, "refer", false, WriteRoot, Always, ""}}},
	{Version: 3, Linux: "6.2", Feature: FeatureTruncate,
		Check:      "truncate restricted to writable roots",
		Lacking:    "truncating files outside the writable roots is not restricted",
		Supervised: "truncating files outside the writable roots is refused only by the seccomp supervisor, best effort",
		Rights:     []Right{{FS, 1 << 14, "truncate", true, WriteRoot | Device, Always, ""}}},
	// TCP bind/connect is denied by Landlock as well as by the seccomp
	// socket filter where a call with the network off has no network
	// namespace of its own; no call is downgraded for it (the filter
	// allows AF_UNIX only).
	{Version: 4, Linux: "6.7", Feature: FeatureNet,
		Check: "TCP bind/connect rules (used when no network namespace can be made)",
		Rights: []Right{
			{Net, 1 << 0, "bind_tcp", false, 0, NoNetNS, "no port is granted: a call with the network on has no handled network right"},
			{Net, 1 << 1, "connect_tcp", false, 0, NoNetNS, "no port is granted: a call with the network on has no handled network right"},
		}},
	{Version: 5, Linux: "6.10", Feature: FeatureIoctlDev,
		Check:  "device ioctls restricted to the terminal and /dev/null",
		Rights: []Right{{FS, 1 << 15, "ioctl_dev", true, Device, Always, ""}}},
	{Version: 6, Linux: "6.12", Feature: FeatureScope,
		Check:   "signals and abstract unix sockets scoped to the sandbox",
		Lacking: "signals to and abstract unix sockets of processes outside the sandbox are not scoped",
		Rights: []Right{
			// With the network on, the command may reach every abstract
			// socket, as it may every address.
			{Scope, 1 << 0, "abstract_unix_socket", false, 0, NetworkOff, "a scope: no rule grants it"},
			{Scope, 1 << 1, "signal", false, 0, Always, "a scope: no rule grants it"},
		}},
	// The audit flags of landlock_restrict_self are not passed: by default
	// Landlock logs no denial after an execve, and sbx does not read the
	// audit log (that needs CAP_AUDIT_READ); denial reports come from the
	// seccomp supervisor (Ruleset.RestrictSelf).
	{Version: 7, Linux: "6.15", Feature: FeatureAudit,
		Check: "denials logged to the audit subsystem"},
	// LANDLOCK_RESTRICT_SELF_TSYNC is not passed: neither launch path
	// wants every thread of sbx in the domain (Ruleset.RestrictSelf).
	{Version: 8, Linux: "7.0"},
	{Version: 9, Linux: "7.0", Feature: FeatureResolveUnix,
		Check:       "with the network off, pathname unix sockets outside writable roots unreachable",
		Lacking:     "pathname unix sockets outside the writable roots stay reachable with the network off",
		LackingWhen: NetworkOff,
		Rights: []Right{
			// Handling it cuts the command off from every pathname unix
			// socket not granted by a rule, which only a network-off
			// policy wants. The writable roots grant it: the sockets
			// there are the command's own (a test server, a build daemon).
			{FS, 1 << 16, "resolve_unix", false, WriteRoot, NetworkOff, ""},
		}},
	// IMPORTANT: UDP is not handled. A call with the network off and no
	// network namespace of its own is kept off UDP by the seccomp socket
	// filter alone (AF_UNIX only), not by Landlock.
	{Version: 10, Linux: "7.2", Rights: []Right{
		{Net, 1 << 2, "bind_udp", false, 0, Unused, "the seccomp socket filter allows AF_UNIX only where no network namespace is the wall"},
		{Net, 1 << 3, "connect_send_udp", false, 0, Unused, "the seccomp socket filter allows AF_UNIX only where no network namespace is the wall"},
	}},
}

// Rights are every right and scope bit of every ABI, in table order (a
// copy: the table is not to be changed).
func Rights() []Right { return slices.Clone(allRights) }

// allRights is Rights, flattened once: Granted, FileRights and NameList
// walk it on every call's plan.
var allRights = func() []Right {
	var out []Right
	for _, a := range ABIs {
		out = append(out, a.Rights...)
	}
	return out
}()

// Mask is the rights of kind k that an ABI abi ruleset has and sbx handles
// on a ruleset of the given kinds (when): Mask(FS, abi, Always) is what
// every ruleset denies unless a rule grants it.
func Mask(k Kind, abi int, when ...When) uint64 {
	var m uint64
	for _, a := range ABIs {
		if a.Version > abi {
			break
		}
		for _, r := range a.Rights {
			if r.Kind == k && slices.Contains(when, r.When) {
				m |= r.Bit
			}
		}
	}
	return m
}

// Granted is the file-system rights a rule of kind g grants among those
// handled when: Granted(WriteRoot, Always) is a writable root's write
// rights. Rights an ABI lacks are dropped when the ruleset is made (the
// handled mask).
func Granted(g Grant, when ...When) uint64 {
	var m uint64
	for _, r := range allRights {
		if r.Kind == FS && r.Grant&g != 0 && slices.Contains(when, r.When) {
			m |= r.Bit
		}
	}
	return m
}

// FileRights are the file-system rights sbx grants on a rule for a
// non-directory.
func FileRights() uint64 {
	var m uint64
	for _, r := range allRights {
		if r.Kind == FS && r.File {
			m |= r.Bit
		}
	}
	return m
}

// Names spells the rights of kind k in mask, in bit order, comma-separated.
func Names(k Kind, mask uint64) string { return strings.Join(NameList(k, mask), ",") }

// NameList is Names as a list (nil for none): the report's Landlock
// features and scopes are lists.
func NameList(k Kind, mask uint64) []string {
	var out []string
	for _, r := range allRights {
		if r.Kind == k && mask&r.Bit != 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// ByFeature returns the row of the ABI that stands for feature, or false.
func ByFeature(feature string) (ABI, bool) {
	for _, a := range ABIs {
		if feature != "" && a.Feature == feature {
			return a, true
		}
	}
	return ABI{}, false
}

// Minimum is the first Linux with feature ("Linux 5.19, Landlock ABI 2"),
// or "" for a feature no ABI stands for.
func Minimum(feature string) string {
	a, ok := ByFeature(feature)
	if !ok {
		return ""
	}
	return fmt.Sprintf("Linux %s, Landlock ABI %d", a.Linux, a.Version)
}
