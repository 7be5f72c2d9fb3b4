package darwin

import (
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
)

// profileWriter accumulates SBPL text and the parameters it refers to.
type profileWriter struct {
	b      strings.Builder
	params []Param
}

// param defines NAME_i = value and returns the SBPL that reads it.
func (w *profileWriter) param(prefix string, i int, value string) string {
	name := fmt.Sprintf("%s_%d", prefix, i)
	w.params = append(w.params, Param{Name: name, Value: value})
	return fmt.Sprintf("(param %q)", name)
}

func (w *profileWriter) comment(format string, args ...any) {
	fmt.Fprintf(&w.b, "; "+format+"\n", args...)
}

func (w *profileWriter) line(s string) { w.b.WriteString(s + "\n") }

func (w *profileWriter) rules(rs []rule) {
	for _, r := range rs {
		w.comment("%s", r.reason)
		w.line(r.sbpl)
	}
}

func (w *profileWriter) sysctls(ss []sysctl) {
	w.line("(allow sysctl-read")
	for _, s := range ss {
		kind := "sysctl-name"
		if s.prefix {
			kind = "sysctl-name-prefix"
		}
		fmt.Fprintf(&w.b, "  (%s %q) ; %s\n", kind, s.name, s.reason)
	}
	w.line(")")
}

func (w *profileWriter) services(ss []service) {
	w.line("(allow mach-lookup")
	for _, s := range ss {
		fmt.Fprintf(&w.b, "  (global-name %q) ; %s\n", s.name, s.reason)
	}
	w.line(")")
}

// pathRefs are the (param ...) expressions of one list of paths.
type pathRefs struct {
	paths []string
	refs  []string
}

func (w *profileWriter) define(prefix string, paths []string) pathRefs {
	r := pathRefs{paths: paths}
	for i, p := range paths {
		r.refs = append(r.refs, w.param(prefix, i, p))
	}
	return r
}

// under returns the refs whose path is inside root.
func (r pathRefs) under(root string) []string {
	var out []string
	for i, p := range r.paths {
		if fspath.Within(p, root) {
			out = append(out, r.refs[i])
		}
	}
	return out
}

// buildProfile renders the profile for a restricted policy. Rule order
// matters: Seatbelt lets the last matching rule decide, so the guard's
// denials come last.
//
// IMPORTANT: "last match wins" is what Codex's and Anthropic's published
// profiles rely on (deny-after-allow); it was not observed here. Writes do
// not depend on it (carve-outs and masks are require-not inside each
// writable root); reads of masked paths and unix sockets in carve-outs do.
func buildProfile(pol policy.Policy, pp policyPaths) (string, []Param) {
	w := &profileWriter{}
	read := w.define("READ_ROOT", pp.read)
	write := w.define("WRITABLE_ROOT", pp.write)
	ro := w.define("RO", pp.readOnly)
	mask := w.define("MASK", pp.masked)
	dev := w.define("DEVICE", pp.devices)

	w.line("(version 1)")
	w.comment("sbx profile: mode %s, network %s. Every path is a -D parameter.", pol.Mode, pol.Network)
	w.comment("Closed by default: each allow below says why it is needed.")
	w.line("(deny default)")

	w.line("")
	w.comment("== processes, IPC and terminals")
	w.rules(baseRules)

	w.line("")
	w.comment("== sysctls, read only")
	ss := sysctls
	if pol.Network == policy.NetworkFull {
		ss = append(append([]sysctl(nil), sysctls...), networkSysctls...)
	}
	w.sysctls(ss)

	w.line("")
	w.comment("== mach services")
	svc := services
	if pol.Network == policy.NetworkFull {
		svc = append(append([]service(nil), services...), networkServices...)
	}
	w.services(svc)

	w.line("")
	writeReads(w, pp.readAll, read, write)
	w.line("")
	writeDevices(w, dev)
	w.line("")
	writeWrites(w, write, ro, mask)
	w.line("")
	writeNetwork(w, pol.Network, write, ro)
	if len(mask.refs) > 0 {
		w.line("")
		writeGuard(w, mask)
	}
	if len(pp.globs) > 0 {
		w.line("")
		writeDenyGlobs(w, pp.globs)
	}
	return w.b.String(), w.params
}

func writeReads(w *profileWriter, readAll bool, read, write pathRefs) {
	w.comment("== file reads")
	if readAll {
		w.comment("the policy's read roots include /")
		w.line("(allow file-read*)")
		return
	}
	// IMPORTANT: with reads narrowed, programs also need dyld's shared cache,
	// /usr/lib and /System to start at all; the Policy must list them. No
	// built-in mode narrows reads today.
	w.comment("the policy's read roots, and the writable roots (writing implies reading)")
	w.line("(allow file-read*")
	for _, r := range append(append([]string(nil), read.refs...), write.refs...) {
		w.line("  (subpath " + r + ")")
	}
	w.line(")")
}

func writeDevices(w *profileWriter, dev pathRefs) {
	w.comment("== devices: the policy's device files (shells redirect to /dev/null, keep their terminal)")
	if len(dev.refs) == 0 {
		w.comment("none")
		return
	}
	w.line("(allow file-read* file-write-data file-ioctl")
	for _, r := range dev.refs {
		w.line("  (literal " + r + ")")
	}
	w.line(")")
}

// writeWrites grants each writable root minus the carve-outs and masked
// paths inside it. Each exclusion is both literal and subpath: subpath alone
// may leave creating the excluded path itself (mkdir .git) allowed.
func writeWrites(w *profileWriter, write, ro, mask pathRefs) {
	w.comment("== file writes: the writable roots, minus read-only carve-outs and guard-masked paths")
	if len(write.refs) == 0 {
		w.comment("no writable roots: every write but the devices above is denied")
		return
	}
	w.line("(allow file-write*")
	for i, root := range write.refs {
		excl := append(ro.under(write.paths[i]), mask.under(write.paths[i])...)
		if len(excl) == 0 {
			w.line("  (subpath " + root + ")")
			continue
		}
		w.line("  (require-all (subpath " + root + ")")
		for j, x := range excl {
			end := ""
			if j == len(excl)-1 {
				end = ")"
			}
			w.line("    (require-not (literal " + x + ")) (require-not (subpath " + x + "))" + end)
		}
	}
	w.line(")")
}

// writeNetwork denies or allows the network. With the network off, unix
// sockets stay usable by path inside the writable roots, except inside the
// read-only carve-outs.
//
// IMPORTANT: a writable /tmp (workspace-write) makes every unix socket under
// /private/tmp reachable, including launchd's per-user sockets such as
// ssh-agent's SSH_AUTH_SOCK. The same holds on Linux, where Landlock does
// not restrict connect(2) to a named socket at all.
func writeNetwork(w *profileWriter, n policy.Network, write, ro pathRefs) {
	if n == policy.NetworkFull {
		w.comment("== network: full")
		w.rules(networkRules)
		return
	}
	w.comment("== network: off (no TCP or UDP at all, not even loopback)")
	w.line("(deny network*)")
	if len(write.refs) == 0 {
		w.comment("no writable roots: no unix sockets either")
		return
	}
	w.comment("unix sockets by path inside the writable roots: servers the command starts (a test database, a language server)")
	w.line("(allow network-bind network-inbound")
	for _, r := range write.refs {
		w.line("  (local unix-socket (subpath " + r + "))")
	}
	w.line(")")
	w.line("(allow network-outbound")
	for _, r := range write.refs {
		w.line("  (remote unix-socket (subpath " + r + "))")
	}
	w.line(")")
	if len(ro.refs) == 0 {
		return
	}
	w.comment("but not inside the read-only carve-outs (git's fsmonitor socket lives in .git)")
	for _, r := range ro.refs {
		w.line("(deny network-bind (local unix-socket (subpath " + r + ")))")
		w.line("(deny network-outbound (remote unix-socket (subpath " + r + ")))")
	}
}

// writeGuard denies the masked paths last, so no allow above widens past
// the guard.
func writeGuard(w *profileWriter, mask pathRefs) {
	w.comment("== guard: masked paths can be neither read, written, run nor connected to (last: it wins)")
	w.line("(deny file-read* file-write* process-exec")
	for _, r := range mask.refs {
		w.line("  (literal " + r + ") (subpath " + r + ")")
	}
	w.line(")")
	for _, r := range mask.refs {
		w.line("(deny network-bind (local unix-socket (subpath " + r + ")))")
		w.line("(deny network-outbound (remote unix-socket (subpath " + r + ")))")
	}
}
