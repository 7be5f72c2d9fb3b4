//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Launch modes, as reported in enforcement.launch.
const (
	LaunchThread = "thread"
	LaunchStage  = "stage"
	LaunchDirect = "direct"
)

// System is what the running kernel and user offer; Probe fills it.
type System struct {
	LandlockABI int
	// Privileged: sbx may create namespaces and mount without a user namespace.
	Privileged bool
	// UserNS: unprivileged user namespaces can be created.
	UserNS bool
	// UserNSReason says why UserNS is false.
	UserNSReason string
	// UserNotif: seccomp user notification (Linux 5.0), for the supervisor.
	UserNotif bool
	// UserNotifReason says why UserNotif is false.
	UserNotifReason string
	// InitUserNS: sbx runs in the machine's initial user namespace (not
	// in a container's).
	InitUserNS bool
	// ProcFullyVisible: no mount hides part of the host's /proc (see
	// procFullyVisible), so a user namespace may mount a new procfs.
	ProcFullyVisible bool
	// ServerUserNS: sbx is the unprivileged sbx serve inside the user
	// namespace it made at start-up (EnterServerUserNS). Privileged is
	// then true, but only there: no capability can be kept for a command
	// (--cap-add), and the plans say the call runs in a user namespace.
	ServerUserNS bool
	// Creds are the command's credentials for file permissions (sbx's
	// own); nil skips the writable-root-access check (rootaccess.go).
	Creds *Creds
}

// Probe inspects the running kernel and user. It makes no namespaces: the
// user-namespace answer comes from sysctls, and a launch that still fails to
// create one falls back and reports it.
//
// What it reads from files (sysctls, seccomp's actions, the uid map, the
// mounts below /proc) is kept for probeTTL: a server probes once per call,
// and those reads were ~0.1 ms of each; they change rarely, and a launch
// that meets a change (a user namespace refused) falls back and reports
// it all the same. The capability and Landlock answers are asked each time.
func Probe() System {
	probed.Lock()
	if time.Since(probed.at) > probeTTL {
		probed.sys = probeFiles()
		probed.at = time.Now()
	}
	s := probed.sys
	probed.Unlock()
	s.LandlockABI, s.Privileged = LandlockABI(), hasCapSysAdmin()
	s.ServerUserNS = inServerUserNS
	if !s.ServerUserNS {
		// Inside the unprivileged server's namespace uid 0 is the
		// caller's own uid: its command has the caller's permissions.
		s.Creds = probeCreds()
	}
	return s
}

// probeTTL is how long Probe keeps what it read from files.
const probeTTL = time.Second

var probed struct {
	sync.Mutex
	at  time.Time
	sys System
}

// probeFiles is the part of Probe read from files.
func probeFiles() System {
	var s System
	s.UserNS, s.UserNSReason = userNSAllowed()
	s.UserNotif, s.UserNotifReason = userNotifAvailable()
	s.InitUserNS = inInitUserNS()
	s.ProcFullyVisible = procFullyVisible()
	return s
}

// TryUserNS makes a user namespace the way a stage launch does (the uid
// and gid maps written by sbx) around the init program, which exits at
// once: the only conclusive test, since a container's seccomp profile, an
// LSM, or an outer sandbox can each forbid what the sysctls allow. It costs
// a fork, so only explain and doctor ask it; a call finds out at its
// launch (ErrUserNS) and falls back.
func TryUserNS() error {
	path, err := initExecutable()
	if err != nil {
		return err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	uid, gid := os.Getuid(), os.Getgid()
	pid, err := syscall.ForkExec(path, []string{"sbx-userns-probe"}, &syscall.ProcAttr{Dir: "/", Env: []string{},
		Files: []uintptr{null.Fd(), null.Fd(), null.Fd()},
		Sys: &syscall.SysProcAttr{Cloneflags: stageCloneFlags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}}})
	if err != nil {
		return fmt.Errorf("creating a user namespace failed: %w", err)
	}
	wait(pid)
	return nil
}

// WithoutUserNS is sys as it is when creating a user namespace failed
// (err, from TryUserNS or a launch): the plan then falls back to Landlock
// and seccomp without namespaces, and says so in every downgrade.
func (sys System) WithoutUserNS(err error) System {
	sys.UserNS = false
	sys.UserNSReason = err.Error()
	return sys
}

// inInitUserNS reports whether the calling process is in the initial user
// namespace, whose uid map is the identity over every uid. Read once per
// process (Prestart and Probe both ask): a Go process is multithreaded, so
// the kernel refuses it unshare(CLONE_NEWUSER), and sbx makes user
// namespaces only for the children it clones.
var inInitUserNS = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
})

// procFullyVisible reports whether nothing is mounted below /proc but on
// the empty directories procfs keeps for such mounts (binfmt_misc): the
// condition (mount_too_revealing in the kernel) for a user namespace to
// mount a new procfs.
func procFullyVisible() bool {
	mounts, err := mountPoints(threadMountinfo)
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.path, "/proc/") && m.path != "/proc/sys/fs/binfmt_misc" {
			return false
		}
	}
	return true
}

// userNotifAvailable reads the seccomp actions the kernel offers. When the
// list cannot be read, it says yes: loading the filter then finds out, and
// a failure there is reported the same way.
func userNotifAvailable() (bool, string) {
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		return true, ""
	}
	if slices.Contains(strings.Fields(string(b)), "user_notif") {
		return true, ""
	}
	return false, "the kernel has no seccomp user notification (Linux 5.0)"
}

func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

func userNSAllowed() (bool, string) {
	for _, c := range []struct{ file, bad string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			continue
		}
		if strings.TrimSpace(string(b)) == c.bad {
			return false, fmt.Sprintf("%s is %s", c.file, c.bad)
		}
	}
	return true, ""
}

// Plan is a Policy compiled for this kernel: the exact rules, namespaces and
// launch mode one call gets.
type Plan struct {
	Policy   policy.Policy
	Launch   string
	Landlock *LandlockPlan `json:",omitempty"`
	Seccomp  []SeccompRule `json:"-"`
	Sockets  SocketPolicy
	// NewNetNS: a private network namespace with only loopback up.
	NewNetNS bool
	// Proxy: network by domain (Policy.Domains). The launcher makes the
	// proxy's listening sockets inside the call's network namespace and sbx
	// serves them from its own (proxy.go).
	Proxy bool `json:",omitempty"`
	// NewPIDNS: the command runs in a new PID namespace whose init dies with
	// sbx, taking every process of the call with it.
	NewPIDNS bool
	// NewUserNS: the namespaces are created inside a new user namespace
	// (unprivileged caller); this needs the stage launch.
	NewUserNS bool
	// ServerUserNS: the call's namespaces are made inside the user
	// namespace the unprivileged sbx serve made at start-up, one for all
	// its calls (System.ServerUserNS), by a thread launch.
	ServerUserNS bool `json:",omitempty"`
	// NewUTSNS and NewIPCNS: the command's hostname and System V IPC
	// objects are its own.
	NewUTSNS bool `json:",omitempty"`
	NewIPCNS bool `json:",omitempty"`
	// PrivateProc: /proc is a procfs of the call's PID namespace (host
	// processes, sbx's own environment among them, are not there), with
	// /proc/sys and the other machine-wide parts read-only (procReadOnly).
	PrivateProc bool `json:",omitempty"`
	// Capabilities are the capabilities the command keeps (--cap-add);
	// every other one is dropped from every set, the bounding set
	// included, and the securebits are locked (caps.go).
	Capabilities []int `json:",omitempty"`
	// Creds are the command's credentials the supervisor checks a write
	// the policy allows with (rootaccess.go); nil: no check.
	Creds        *Creds `json:"-"`
	credsCanKeep bool
	// Placeholders are carve-outs that do not exist yet (a missing .git in
	// a writable root) that the kernel is to keep from being created: Start
	// creates each as an empty directory, which is bind-mounted read-only
	// like ReadOnlyMounts, so the command cannot create it (EROFS), remove
	// it or mount over it (EBUSY, EPERM), and removes it after the call if
	// it is still empty. Only where the supervisor cannot stand in for
	// them, or the caller requires carve-out-create: the command sees a
	// .git that is not there bare (Go's -buildvcs=auto then runs git,
	// which fails "not a git repository", with no denial to say why).
	Placeholders []string `json:",omitempty"`
	// Watched are the missing carve-outs that get no placeholder, so that
	// the command sees them as missing, as it does bare: the supervisor
	// refuses creating one and reports it (best effort during the call),
	// and Wait, once the command's tree is dead, removes whichever
	// appeared anyway and reports it (sweep.go): none survives the call.
	Watched []string `json:",omitempty"`
	// ReadOnlyMounts are existing carve-outs bind-mounted read-only in a
	// private mount namespace.
	ReadOnlyMounts []string
	// ReadOnlyRoot: every mount of the call's mount namespace is made
	// read-only except the writable roots and the mounts below them, which
	// keep their flags (bwrap's --ro-bind / / --bind W W; see readOnlyRoot).
	// Device files are not covered: a read-only mount still opens them for
	// writing.
	ReadOnlyRoot bool `json:",omitempty"`
	// MaskedMounts are existing paths the guard forbids reading, hidden under
	// an empty read-only tmpfs (directories) or /dev/null (files).
	MaskedMounts []string
	// MaskedLinks are the files under MaskedMounts that have names no mask
	// covers (hard links made earlier), which only the supervisor refuses,
	// best effort (maskinode.go); maskedInodes indexes them by inode.
	MaskedLinks  []MaskedLink `json:",omitempty"`
	maskedInodes map[devIno]int
	// Devices are the device files the command may write: the policy's and
	// the terminals behind sbx's standard streams, resolved.
	Devices []string
	// Limits are the call's resource limits; Cgroup and Rlimits are what
	// enforces them (cgroup.go), LimitMechanism says which in the report.
	Limits         report.Limits
	Cgroup         *CgroupPlan `json:",omitempty"`
	Rlimits        []Rlimit    `json:",omitempty"`
	LimitMechanism string      `json:",omitempty"`
	// Supervise says whether the seccomp supervisor runs (supervise.go).
	Supervise   Supervise
	Downgrades  []report.Downgrade
	SeccompProg BPFProgram
	// SeccompPlainProg is the filter without its user-notification rules,
	// loaded instead when no listener can be had at launch (Supervise is
	// SuperviseBestEffort).
	SeccompPlainProg BPFProgram `json:",omitempty"`
	// unsupervised holds, by index into Downgrades, what a downgrade that
	// counts on the supervisor says without it.
	unsupervised map[int]report.Downgrade
	// unsupervisedOnly are downgrades that only a plan without the
	// supervisor has: what it enforces by itself, race-free.
	unsupervisedOnly []report.Downgrade
	// supervisorFeatures name those downgrades' features.
	supervisorFeatures []report.Feature
}

// requireSupervisorFor makes the supervisor required (the launch fails
// without it) when required names a feature only the supervisor gives this
// plan, so that --require of it holds at launch too.
func (p *Plan) requireSupervisorFor(required []report.Feature) {
	if p.Supervise == SuperviseOff {
		return
	}
	for _, f := range required {
		if slices.Contains(p.supervisorFeatures, f) {
			p.Supervise = SuperviseRequired
		}
	}
}

// addSupervised records a downgrade whose reason counts on the supervisor,
// and what it says instead if the supervisor cannot run after all.
func (p *Plan) addSupervised(d, unsupervised report.Downgrade) {
	if p.unsupervised == nil {
		p.unsupervised = map[int]report.Downgrade{}
	}
	p.unsupervised[len(p.Downgrades)] = unsupervised
	p.Downgrades = append(p.Downgrades, d)
}

// degrade records a downgrade whose reason depends on the supervisor: with
// it, the gap is narrowed to best effort (supervised); without it, plain.
func (p *Plan) degrade(feature report.Feature, plain, supervised string) {
	d := report.Downgrade{Feature: feature, Reason: plain}
	if p.Supervise == SuperviseOff {
		p.Downgrades = append(p.Downgrades, d)
		return
	}
	reason := supervised
	if !strings.HasPrefix(supervised, "Landlock") {
		reason = "Landlock is not available on this kernel: " + supervised
	}
	p.addSupervised(report.Downgrade{Feature: feature, Reason: reason}, d)
}

// UnsupervisedDowngrades is Downgrades as they read when the supervisor
// could not be set up at launch (SupervisionResult.Downgrades says so).
func (p *Plan) UnsupervisedDowngrades() []report.Downgrade {
	out := slices.Clone(p.Downgrades)
	for i, d := range p.unsupervised {
		out[i] = d
	}
	return append(out, p.unsupervisedOnly...)
}

// Supervise is whether the seccomp supervisor runs for a plan.
type Supervise int

const (
	// SuperviseOff: no supervisor; denials are not reported.
	SuperviseOff Supervise = iota
	// SuperviseBestEffort: run it; if the listener cannot be had at launch,
	// run without and report a "denial-reports" downgrade.
	SuperviseBestEffort
	// SuperviseRequired: run it, or fail the launch (--require denial-reports).
	SuperviseRequired
)

// Options are what a call adds to its policy's plan.
type Options struct {
	// Limits are the call's resource limits (setLimits decides what
	// enforces each).
	Limits report.Limits
	// NoDenialReports runs without the seccomp supervisor: nothing the
	// sandbox blocks is reported.
	NoDenialReports bool
	// Require are the features the call may not run without; where only
	// the supervisor gives one, the supervisor becomes required.
	Require []report.Feature
	// Cwd is the command's working directory: inside a writable root, it
	// is checked as one (rootaccess.go).
	Cwd string
}

// Compile turns pol into a Plan for sys and the call's opts; nothing
// changes the plan after it. It fails only on an internal error; whatever
// the kernel lacks becomes a Downgrade.
func Compile(pol policy.Policy, sys System, opts Options) (*Plan, error) {
	p, err := compile(pol, sys, opts)
	if err != nil {
		return nil, err
	}
	p.setLimits(opts.Limits)
	p.compileCwdAccess(opts.Cwd)
	if opts.NoDenialReports {
		p.withoutSupervisor()
	}
	if slices.Contains(opts.Require, report.FeatureDenialReports) && p.Supervise != SuperviseOff {
		p.Supervise = SuperviseRequired
	}
	p.requireSupervisorFor(opts.Require)
	return p, nil
}

// compile is Compile for the policy, with what of opts decides the
// carve-outs' protection.
func compile(pol policy.Policy, sys System, opts Options) (*Plan, error) {
	p := &Plan{Policy: pol, Launch: LaunchThread, ServerUserNS: sys.ServerUserNS}
	if pol.Unrestricted {
		p.Launch = LaunchDirect
		return p, nil
	}
	if err := p.compileCapabilities(sys); err != nil {
		return nil, err
	}
	p.compileRootAccess(sys)
	sup := NotifyNone
	if sys.UserNotif {
		p.Supervise, sup = SuperviseBestEffort, NotifyWrites
	} else {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureDenialReports,
			Reason: sys.UserNotifReason + ": operations the sandbox blocks are not reported" + unsupervisedSetgid})
	}
	// Every sandboxed call gets a PID namespace, so that the whole tree dies
	// with sbx; hence namespaces are always needed.
	needNS := sys.Privileged || sys.UserNS
	// The kernel's wall for a missing carve-out (a placeholder) where
	// nothing else stands for it, or the caller requires it.
	// So also where the call has no PID namespace (compileNamespaces): its
	// tree could outlive Wait, which then cannot remove what it made
	// without a race.
	noPIDNS := sys.Privileged && runtime.GOARCH != "amd64"
	wall := p.Supervise == SuperviseOff || opts.NoDenialReports || slices.Contains(opts.Require, report.FeatureCarveOutCreate) || noPIDNS
	masked := p.compileCarveOuts(needNS, wall)
	p.compileNamespaces(sys)
	p.compileMaskLinks(masked)
	p.compileNetwork(sys, needNS)
	p.NewUTSNS, p.NewIPCNS = needNS, needNS
	p.compileProc(sys, needNS)
	p.compileDenyGlobs(pol)
	if err := p.compileSeccomp(sup); err != nil {
		return nil, err
	}
	ttys := ttyPaths()
	if pol.Terminal != "" {
		ttys = []string{pol.Terminal}
	}
	p.Devices = resolveAll(append(slices.Clone(pol.Devices), ttys...))
	p.compileLandlock(sys.LandlockABI, needNS)
	p.compileAttributes(needNS)
	return p, nil
}

// compileCapabilities takes the capabilities the command keeps
// (--cap-add), which only root's thread launch can give.
func (p *Plan) compileCapabilities(sys System) error {
	for _, name := range p.Policy.Capabilities {
		c, err := enforce.ParseCapability(name)
		if err != nil {
			return err
		}
		if !sys.Privileged || sys.ServerUserNS {
			// The stage's capabilities would be its user namespace's, and
			// it gets only those it needs: keeping one is for root alone.
			// The CLI let root through (cap_add, --cap-add); root in a
			// container's default capability set lacks CAP_SYS_ADMIN.
			return fmt.Errorf("--cap-add/cap_add %s: keeping a capability needs sbx run as root with CAP_SYS_ADMIN (root without it, as in a container, gets a user namespace, whose capabilities are not the host's)", name)
		}
		if !slices.Contains(p.Capabilities, c) {
			p.Capabilities = append(p.Capabilities, c)
		}
	}
	return nil
}

// compileNamespaces picks the launch and its PID and user namespaces for
// sys; without user namespaces, what the mounts would have given is
// downgraded.
func (p *Plan) compileNamespaces(sys System) {
	pol := p.Policy
	switch {
	case sys.Privileged:
		p.NewPIDNS = runtime.GOARCH == "amd64" // the thread launch's init is x86-64 code
		if !p.NewPIDNS {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeaturePIDNS,
				Reason: "no PID namespace init for " + runtime.GOARCH + " yet: processes the command leaves behind survive if sbx is killed"})
		}
	case sys.UserNS:
		p.NewUserNS, p.NewPIDNS = true, true
		p.Launch = LaunchStage
	default:
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeaturePIDNS,
			Reason: "no user namespaces (" + sys.UserNSReason + "): processes the command leaves behind survive if sbx is killed"})
		if len(p.ReadOnlyMounts) > 0 {
			plain := report.Downgrade{Feature: report.FeatureMountNS,
				Reason: "no user namespaces (" + sys.UserNSReason + "): read-only carve-outs " + strings.Join(p.ReadOnlyMounts, ", ") + " are writable"}
			if p.Supervise != SuperviseOff {
				p.addSupervised(report.Downgrade{Feature: report.FeatureMountNS, Reason: plain.Reason + " (the seccomp supervisor refuses the writes it sees, best effort)"}, plain)
			} else {
				p.Downgrades = append(p.Downgrades, plain)
			}
			p.ReadOnlyMounts = nil
		}
		if len(p.MaskedMounts) > 0 {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureMask,
				Reason: "no user namespaces (" + sys.UserNSReason + "): guard deny-read paths " + strings.Join(p.MaskedMounts, ", ") + " stay readable"})
			p.MaskedMounts = nil
		}
		if pol.Network == policy.NetworkIsolated {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetNS,
				Reason: "no user namespaces (" + sys.UserNSReason + "): network isolated by seccomp (AF_UNIX only) and Landlock TCP rules instead"})
		}
	}
}

// compileNetwork gives an isolated call its network namespace, network by
// domain its proxy, and picks the seccomp socket rules.
func (p *Plan) compileNetwork(sys System, needNS bool) {
	pol := p.Policy
	p.NewNetNS = needNS && pol.Network == policy.NetworkIsolated
	if pol.Domains != nil {
		// Without a namespace of its own the command would share the
		// host's loopback with the proxy's listener, and seccomp keeps it
		// to unix sockets anyway: it runs without network, reported.
		p.Proxy = p.NewNetNS
		if !p.Proxy {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetworkDomains,
				Reason: "no network namespace (no user namespaces: " + sys.UserNSReason + "): network by domain needs one for the proxy; the command runs without network"})
		}
	}
	switch {
	case pol.Network == policy.NetworkFull:
		p.Sockets = SocketsAny
	case p.NewNetNS:
		p.Sockets = SocketsLoopbackNetns
	default:
		p.Sockets = SocketsUnixOnly
	}
}

// compileSeccomp builds the filter: sup says which calls go to the
// supervisor (reads too where a read can be a denial), and the plain
// program is the same table without the supervisor, for a launch that
// cannot have one.
func (p *Plan) compileSeccomp(sup NotifyScope) error {
	if sup == NotifyWrites && (p.reportedMasks() || len(p.MaskedLinks) > 0 || hasReadGlobs(p.Policy)) {
		// Reads are supervised only where a read can be a denial: a path
		// the mount namespace hides (without one, the mask downgrade says
		// it stays readable, so its reads are no denials) and whose reads
		// are reported, or a hard link of a hidden file, which only the
		// supervisor keeps closed.
		sup = NotifyReads
	}
	f, err := seccompFilters(p.Sockets, sup)
	if err != nil {
		return err
	}
	p.Seccomp, p.SeccompProg, p.SeccompPlainProg = f.table, f.prog, f.plain
	return nil
}

// reportedMasks says whether a mounted mask's reads are reported: one
// that is not in Policy.Unreported (sbx serve's state directory is, and a
// server's every call would otherwise pay a supervised open).
func (p *Plan) reportedMasks() bool {
	for _, m := range p.MaskedMounts {
		if !slices.Contains(p.Policy.Unreported, m) {
			return true
		}
	}
	return false
}

// seccompFilter is what compileSeccomp makes of one (sockets, scope).
type seccompFilter struct {
	table       []SeccompRule
	prog, plain BPFProgram
}

// seccompCache keeps each (sockets, scope)'s filter once compiled: the
// table and programs are a pure function of the two (a few kinds in all),
// and building them was a third of a plan's compile in a server's CPU
// profile (#31). Plans share the slices: nothing writes them after this.
// It is data, not isolation: each call still loads the filter into its own
// thread.
var seccompCache sync.Map // seccompKey -> *seccompFilter

type seccompKey struct {
	sockets SocketPolicy
	sup     NotifyScope
}

// seccompFilters returns the filter of (sockets, sup), compiled once.
func seccompFilters(sockets SocketPolicy, sup NotifyScope) (*seccompFilter, error) {
	key := seccompKey{sockets, sup}
	if f, ok := seccompCache.Load(key); ok {
		return f.(*seccompFilter), nil
	}
	f := &seccompFilter{table: SeccompTable(sockets, sup)}
	var err error
	if f.prog, err = CompileSeccomp(f.table); err != nil {
		return nil, err
	}
	if sup != NotifyNone {
		if f.plain, err = CompileSeccomp(SeccompRules(sockets)); err != nil {
			return nil, err
		}
	}
	seccompCache.Store(key, f)
	return f, nil
}

// compileAttributes: with a mount namespace every mount outside the
// writable roots is read-only, which also covers what Landlock has no right
// for; without one, that is a downgrade.
func (p *Plan) compileAttributes(needNS bool) {
	// Read-only mounts are the second wall beside Landlock: Landlock has
	// no access right for a file's attributes (chmod, chown, utimes,
	// extended attributes: ACLs and file capabilities are xattrs, inode
	// flags), a read-only mount refuses them all (EROFS).
	p.ReadOnlyRoot = needNS
	if !p.ReadOnlyRoot {
		// IMPORTANT: without a mount namespace, outside the writable roots
		// only the supervisor (chmod, chown: best effort) or nothing
		// (utimes, extended attributes) stands in the way.
		p.degrade(report.FeatureFileAttributes,
			"Landlock has no right for file attributes: chmod, chown, utimes and extended attributes outside the writable roots are not restricted",
			"Landlock has no right for file attributes: chmod and chown outside the writable roots are refused only by the seccomp supervisor, best effort; utimes and extended attributes are not restricted")
	}
}

// compileProc decides the command's /proc: a procfs of the call's own PID
// namespace where one can be mounted, else the host's, reported.
func (p *Plan) compileProc(sys System, mountNS bool) {
	switch {
	case !mountNS || !p.NewPIDNS:
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureProcfs,
			Reason: "no PID and mount namespace: the command sees the host's /proc (processes of its own user are visible, and readable where the kernel's ptrace rules allow)"})
	case !sys.ProcFullyVisible && !(sys.Privileged && sys.InitUserNS):
		// The kernel refuses a new procfs inside a user namespace when the
		// host's /proc has parts hidden under other mounts (a container
		// runtime's masked paths): the new one would reveal them.
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureProcfs,
			Reason: "the host's /proc has paths hidden under other mounts (a container's masked paths), so the kernel allows no new procfs: the command sees the host's /proc"})
	default:
		p.PrivateProc = true
	}
}

// resolveAll resolves symlinks in each path that exists and drops
// duplicates; a path that cannot be resolved is kept as it is.
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Degraded is what the plan could not apply: its Downgrades.
func (p *Plan) Degraded() []report.Downgrade { return p.Downgrades }

// Enforcement describes the plan as applied, for the report.
func (p *Plan) Enforcement() report.Enforcement {
	e := report.Enforcement{Platform: "linux", Launch: p.Launch, NoNewPrivs: true, NewSession: true,
		ParentDeathKill: true, ClosedFDs: true}
	if p.Launch == LaunchDirect {
		// The unprivileged server has the outer sbx serve launch it, in
		// the user's own namespace (serveuserns_direct.go). IMPORTANT:
		// except with a call cgroup (delegated cgroups), which the outer
		// cannot join: then it runs in the server's user namespace, where
		// root's files show as the overflow uid, and setuid-root programs
		// and file capabilities do not take effect (they do under sbx run).
		e.UserNamespace = p.ServerUserNS && !launchesOutside(p)
		return e
	}
	e.NetworkNamespace = p.NewNetNS
	e.NetworkDomains = p.Proxy
	e.MountNamespace = p.needsMountNS()
	e.MaskedPaths = p.MaskedMounts
	e.UserNamespace = p.NewUserNS || p.ServerUserNS
	e.PIDNamespace = p.NewPIDNS
	e.UTSNamespace, e.IPCNamespace = p.NewUTSNS, p.NewIPCNS
	e.ReadOnlyRoot = p.ReadOnlyRoot
	e.ReadOnlyMounts = append(slices.Clone(p.ReadOnlyMounts), p.Placeholders...)
	e.Procfs = "host"
	if p.PrivateProc {
		e.Procfs = "private"
	}
	e.CapabilitiesDropped = true
	for _, c := range p.Capabilities {
		e.Capabilities = append(e.Capabilities, CapabilityName(c))
	}
	e.Seccomp = &report.SeccompInfo{Sockets: p.Sockets.String(), Rules: len(p.Seccomp)}
	if lp := p.Landlock; lp != nil {
		li := &report.LandlockInfo{ABI: lp.ABI, FS: true, NetTCP: lp.HandledNet != 0, Rules: len(lp.Rules)}
		if lp.Scoped&unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET != 0 {
			li.Scopes = append(li.Scopes, "abstract_unix_socket")
		}
		if lp.Scoped&unix.LANDLOCK_SCOPE_SIGNAL != 0 {
			li.Scopes = append(li.Scopes, "signal")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_REFER != 0 {
			li.Features = append(li.Features, "refer")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
			li.Features = append(li.Features, "truncate")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0 {
			li.Features = append(li.Features, "ioctl_dev")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0 {
			li.Features = append(li.Features, "resolve_unix")
		}
		e.Landlock = li
	}
	return e
}

// String renders the plan as stable text for `sbx explain` and golden tests.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nlaunch: %s\n", p.Policy.Mode, p.Launch)
	if l := p.Limits; !l.IsZero() {
		fmt.Fprintf(&b, "limits: memory=%d pids=%d cpus=%g via %s\n", l.MemoryBytes, l.Pids, l.CPUs, p.LimitMechanism)
	}
	if p.Launch == LaunchDirect {
		b.WriteString("no restrictions (danger-full-access)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "namespaces: user=%t pid=%t net=%t mount=%t uts=%t ipc=%t\n", p.NewUserNS || p.ServerUserNS, p.NewPIDNS, p.NewNetNS, p.needsMountNS(), p.NewUTSNS, p.NewIPCNS)
	if d := p.Policy.Domains; p.Proxy {
		allowed := strings.Join(d.Allowed, ",")
		if d.AllowAll {
			allowed = "every host"
		}
		fmt.Fprintf(&b, "proxy: HTTP and SOCKS5 on 127.0.0.1 and ::1 in the call's network namespace, allowed %s", allowed)
		if len(d.Denied) > 0 {
			fmt.Fprintf(&b, ", denied %s", strings.Join(d.Denied, ","))
		}
		fmt.Fprintf(&b, ", private addresses %t\n", d.AllowPrivateAddresses)
	}
	caps := "none"
	if len(p.Capabilities) > 0 {
		var names []string
		for _, c := range p.Capabilities {
			names = append(names, CapabilityName(c))
		}
		caps = strings.Join(names, ",")
	}
	fmt.Fprintf(&b, "capabilities: %s kept (bounding set emptied, securebits locked)\n", caps)
	for _, op := range p.MountOps() {
		fmt.Fprintf(&b, "mount: %s\n", op)
	}
	for _, w := range p.Watched {
		fmt.Fprintf(&b, "watch: %s (missing carve-out, left missing: creating it is refused by the supervisor; after the call, whatever appeared there is removed and reported)\n", w)
	}
	for _, l := range p.MaskedLinks {
		fmt.Fprintf(&b, "mask: %s (inode %d:%d) has %d name(s) no mask covers\n", l.Path, l.Dev, l.Ino, l.Uncovered)
	}
	for _, d := range p.Policy.DenyGlobs {
		fmt.Fprintf(&b, "deny-glob: deny_%s %s (given %s): existing matches masked or read-only above; new ones refused by the supervisor only\n", d.Access, d.Pattern, d.Given)
	}
	if lp := p.Landlock; lp != nil {
		fmt.Fprintf(&b, "landlock: abi=%d handled_fs=%s\n", lp.ABI, accessString(lp.HandledFS))
		if lp.HandledNet != 0 {
			b.WriteString("landlock: handled_net=bind_tcp,connect_tcp (no port allowed)\n")
		}
		for _, r := range lp.Rules {
			fmt.Fprintf(&b, "landlock: allow %s %s\n", r.Path, accessString(r.Access&lp.HandledFS))
		}
	}
	fmt.Fprintf(&b, "seccomp: sockets=%s\n", p.Sockets)
	if p.Supervise != SuperviseOff {
		b.WriteString("supervisor: USER_NOTIF calls are checked against the policy; what it forbids is refused and reported, the rest continues to Landlock\n")
		if slices.Contains(p.supervisorFeatures, report.FeatureLandlockResolveUnix) {
			b.WriteString("supervisor: connect, datagrams to an address, and every sendmsg and sendmmsg are carried out by the supervisor on the command's socket; a pathname unix socket outside the writable roots is refused (EACCES), race-free\n")
		}
	}
	for _, r := range p.Seccomp {
		fmt.Fprintf(&b, "seccomp: %s\n", r)
	}
	for _, d := range p.Downgrades {
		fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
	}
	return b.String()
}

// needsMountNS reports whether the plan changes mounts, which needs a
// private mount namespace.
func (p *Plan) needsMountNS() bool {
	return len(p.MountOps()) > 0
}

// pathOpens reports whether path can be opened as Landlock's rules open
// it (O_PATH: no read permission needed).
func pathOpens(path string) bool {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// withoutSupervisor drops the seccomp supervisor from the plan, for a caller
// that does not want denial reports (and their cost per supervised call):
// the filter without notification rules, and the downgrades as they read
// without it, plus one saying denials are not reported.
func (p *Plan) withoutSupervisor() {
	if p.Supervise == SuperviseOff || len(p.SeccompPlainProg) == 0 {
		return
	}
	p.Downgrades = append(p.UnsupervisedDowngrades(), report.Downgrade{Feature: report.FeatureDenialReports,
		Reason: "turned off by the caller: operations the sandbox blocks are not reported" + unsupervisedSetgid})
	p.SeccompProg, p.Supervise = p.SeccompPlainProg, SuperviseOff
	p.unsupervised, p.unsupervisedOnly, p.supervisorFeatures = nil, nil, nil
}
