package report

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotSupported is matched by every UnsupportedFeatureError.
var ErrNotSupported = errors.New("not supported")

// UnsupportedFeatureError says a required feature is missing on this system.
type UnsupportedFeatureError struct {
	Feature Feature
	Reason  string
}

// Error names the feature, why it is missing and, where the kernel's
// version alone decides it, the first Linux that has it.
func (e *UnsupportedFeatureError) Error() string {
	msg := fmt.Sprintf("required feature %s is not available: %s", e.Feature, e.Reason)
	if min := e.Feature.MinimumLinux(); min != "" {
		msg += " (needs " + min + ")"
	}
	return msg
}

func (e *UnsupportedFeatureError) Is(target error) bool { return target == ErrNotSupported }

// Downgrade is a feature the backend could not apply, and why.
type Downgrade struct {
	Feature Feature `json:"feature"`
	Reason  string  `json:"reason"`
}

// Enforcement describes what a backend applied to one call.
type Enforcement struct {
	Platform string `json:"platform"`
	// Launch is how the command was started: "thread" (restricted launcher
	// thread, no second sbx start), "stage" (sbx re-executed inside new
	// namespaces), or "direct" (danger-full-access).
	Launch           string        `json:"launch"`
	Landlock         *LandlockInfo `json:"landlock,omitempty"`
	Seccomp          *SeccompInfo  `json:"seccomp,omitempty"`
	NetworkNamespace bool          `json:"network_namespace"`
	// NetworkDomains: network by domain, through sbx's proxy listening in
	// the command's network namespace (allowed_domains).
	NetworkDomains  bool `json:"network_domains,omitempty"`
	MountNamespace  bool `json:"mount_namespace"`
	UserNamespace   bool `json:"user_namespace"`
	PIDNamespace    bool `json:"pid_namespace"`
	NoNewPrivs      bool `json:"no_new_privs"`
	NewSession      bool `json:"new_session"`
	ParentDeathKill bool `json:"parent_death_kill"`
	ClosedFDs       bool `json:"closed_fds"`
	// PTY: the command ran on a fresh pseudo-terminal whose slave was the
	// only terminal it could open.
	PTY bool `json:"pty"`
	// ReadOnlyRoot: file writes were confined by mounts (every mount
	// read-only but the writable roots) because the kernel has no Landlock.
	ReadOnlyRoot   bool     `json:"read_only_root,omitempty"`
	ReadOnlyMounts []string `json:"read_only_mounts,omitempty"`
	MaskedPaths    []string `json:"masked_paths,omitempty"`
	// ProtectedNames are the names kept read-only in every writable root
	// (policy.DefaultProtected and --protect, without the defaults after
	// --no-default-protect), whether they exist or not.
	ProtectedNames []string `json:"protected_names,omitempty"`
	// UTSNamespace, IPCNamespace: the command's hostname and System V IPC
	// are its own (Linux).
	UTSNamespace bool `json:"uts_namespace,omitempty"`
	IPCNamespace bool `json:"ipc_namespace,omitempty"`
	// Procfs is the command's /proc on Linux: "private" (its own PID
	// namespace's) or "host".
	Procfs string `json:"procfs,omitempty"`
	// CapabilitiesDropped: the command ran with no capability but
	// Capabilities, whoever ran sbx (root included): every set and the
	// bounding set emptied, securebits locked.
	CapabilitiesDropped bool     `json:"capabilities_dropped,omitempty"`
	Capabilities        []string `json:"capabilities,omitempty"`
}

// LandlockInfo is the Landlock part of an Enforcement.
type LandlockInfo struct {
	ABI      int      `json:"abi"`
	FS       bool     `json:"fs"`
	NetTCP   bool     `json:"net_tcp"`
	Scopes   []string `json:"scopes,omitempty"`
	Rules    int      `json:"rules"`
	Features []string `json:"features,omitempty"`
}

// SeccompInfo is the seccomp part of an Enforcement.
type SeccompInfo struct {
	Sockets string `json:"sockets"`
	Rules   int    `json:"rules"`
}

// Denial is one operation the sandbox blocked, with the evidence for it.
type Denial struct {
	Operation string   `json:"operation"`
	Path      string   `json:"path,omitempty"`
	Address   *Address `json:"address,omitempty"`
	// Domain and Port are what a client asked sbx's proxy for (Source
	// "proxy"); Address is then the address refused, when the name
	// resolved to one the policy does not allow.
	Domain     string `json:"domain,omitempty"`
	Port       int    `json:"port,omitempty"`
	Syscall    string `json:"syscall,omitempty"`
	PID        int    `json:"pid"`
	Source     string `json:"source"`
	Confidence string `json:"confidence"`
	Count      int    `json:"count"`
	Reason     string `json:"reason,omitempty"`
	// Tolerated says the call succeeded with this operation refused (the
	// command exited 0; sbx fs: the change was made): the denial did not
	// fail the call, so it comes with no retry unless the call asked for
	// one (retry_on_success). The operation was refused all the same.
	Tolerated bool `json:"tolerated,omitempty"`
}

// Tolerate marks every denial of ds Tolerated: ds are the denials of a
// call that succeeded.
func Tolerate(ds []Denial) {
	for i := range ds {
		ds[i].Tolerated = true
	}
}

// The confidences of a Denial. ConfidenceObserved: the kernel or the
// supervisor saw the operation and what it named. ConfidenceInferred: the
// supervisor refused an operation it could not see through (a path it could
// not read or resolve), failing closed; the reason says what it missed.
const (
	ConfidenceObserved = "observed"
	ConfidenceInferred = "inferred"
)

// The reasons of a Denial from sbx's proxy (Source "proxy"): why it refused
// a connection. The retry is chosen by them (escalate), so they are the
// vocabulary's, not the proxy's.
const (
	ProxyReasonNotAllowed  = "not in allowed_domains"
	ProxyReasonDenied      = "denied by denied_domains"
	ProxyReasonPrivate     = "resolves to a private address (allow_private_addresses)"
	ProxyReasonMetadata    = "resolves to the cloud metadata address"
	ProxyReasonPort        = "port not allowed"
	ProxyReasonInvalidHost = "not a valid host name"
	ProxyReasonUnsupported = "request not supported by the proxy"
)

// CapabilityReason ends the reason of a denial or downgrade caused by file
// permissions that a capability the command keeps would let through
// ("needs CAP_DAC_OVERRIDE (cap_add)"); NeededCapability reads it back.
func CapabilityReason(capability string) string {
	return capabilityReasonPrefix + capability + capabilityReasonSuffix
}

const (
	capabilityReasonPrefix = "needs "
	capabilityReasonSuffix = " (cap_add)"
)

// NoCapabilityReason ends the reason of such a denial where the command
// can keep no capability: no retry lets it through.
const NoCapabilityReason = "only root with CAP_SYS_ADMIN (not in a user namespace) can keep a capability that lets it through"

// NeededCapability is the capability a reason made by CapabilityReason
// names, or "".
func NeededCapability(reason string) string {
	rest, ok := strings.CutSuffix(reason, capabilityReasonSuffix)
	if !ok {
		return ""
	}
	i := strings.LastIndex(rest, capabilityReasonPrefix)
	if i < 0 {
		return ""
	}
	c := rest[i+len(capabilityReasonPrefix):]
	if !strings.HasPrefix(c, "CAP_") || strings.ContainsAny(c, " ;") {
		return ""
	}
	return c
}

// ReasonControlPlane is the reason of a connect to an sbx server's socket
// that the seccomp supervisor carried out for a call: the server refuses
// every sandboxed call (a call never reaches sbx's control plane), so it
// has no retry.
const ReasonControlPlane = "an sbx server's socket: a sandboxed call never reaches sbx's control plane, and the server refused it"

// ReasonCallSocketBound is the reason of a connect the seccomp supervisor
// refused because the command had bound its unix socket itself: the
// supervisor marks each socket it connects for a call, so that sbx servers
// refuse it (a call never reaches sbx's control plane), and cannot mark a
// bound one. No grant changes that, so it has no retry.
const ReasonCallSocketBound = "a unix socket the command bound itself is not connected for it by the supervisor: " +
	"sbx marks each socket it connects for a call (an abstract address), so that sbx servers refuse it"

// Address is the network part of a Denial.
type Address struct {
	Family  string `json:"family"`
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// Report is the outcome of one call, in the same shape on every platform.
type Report struct {
	ExitCode int `json:"exit_code"`
	// Signal is the number of the signal that ended the command, or null.
	Signal      *int        `json:"signal"`
	SignalName  string      `json:"signal_name,omitempty"`
	Mode        string      `json:"mode"`
	Enforcement Enforcement `json:"enforcement"`
	Degraded    []Downgrade `json:"degraded"`
	Denials     []Denial    `json:"denials"`
	// DenialsDropped counts denials left out of Denials because the list
	// reached its cap of distinct entries (each listed one has a count).
	DenialsDropped int  `json:"denials_dropped,omitempty"`
	TimedOut       bool `json:"timed_out"`
	// KilledBy says why the command was killed: "timeout", "memory" (the
	// kernel's OOM killer in the call's memory cgroup), "signal" (sbx was
	// told to stop) or "parent-death" (sbx's parent went away).
	KilledBy string `json:"killed_by,omitempty"`
	// KilledBySignal names the signal sbx received and relayed when
	// KilledBy is "signal" ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT").
	KilledBySignal string `json:"killed_by_signal,omitempty"`
	DurationMS     int64  `json:"duration_ms"`
	// Resources says how limits were enforced and what the call used.
	Resources Resources `json:"resources"`
}

// NewReport returns an empty report for mode, with empty (not null) lists.
func NewReport(mode string) Report {
	return Report{Mode: mode, Degraded: []Downgrade{}, Denials: []Denial{}, Resources: Resources{Mechanism: "none"}}
}

// Check is one line of `sbx doctor`: a capability, whether this system has
// it, what was seen, and what sbx does when it is missing.
type Check struct {
	Feature   Feature `json:"feature"`
	Available bool    `json:"available"`
	Detail    string  `json:"detail"`
	Fallback  string  `json:"fallback,omitempty"`
}
