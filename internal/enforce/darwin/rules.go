package darwin

// The fixed part of every profile, as data: each entry says why an ordinary
// shell, git, python or node process needs it under (deny default). The
// golden files show these tables rendered; review changes there.
//
// IMPORTANT: the tables follow what Chromium's and Codex's Seatbelt profiles
// allow and what the named tools are known to call. They have not been
// exercised by sandbox-exec on this (Linux) machine. A missing entry shows up
// as a denial in the report (operation mach-lookup or sysctl-read) and is
// fixed here, with its reason.

// rule is one top-level form of the profile.
type rule struct {
	sbpl   string
	reason string
}

// baseRules apply to every sandboxed call.
var baseRules = []rule{
	{`(allow process-fork)`, "shells, git, make and language runtimes start subprocesses"},
	{`(allow process-exec)`, "any program may run; it inherits this profile, so exec never widens access"},
	{`(allow signal (target same-sandbox))`, "kill, job control and timeouts between the command and its own children; nothing outside this sandbox"},
	{`(allow process-info* (target same-sandbox))`, "libproc queries about itself and its children (ps of its own tree, node process.memoryUsage, python resource)"},
	{`(allow ipc-posix-sem)`, "named POSIX semaphores: python multiprocessing's SemLock, node worker pools"},
	{`(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))`, "libnotify's shared page, read by libc before asking notifyd (timezone and resolver change checks)"},
	{`(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))`, "CFPreferences' shared memory, read together with user-preference-read"},
	{`(allow user-preference-read)`, "CFPreferences reads: the xcrun shims behind /usr/bin/git and /usr/bin/python3, sw_vers, defaults read"},
	{`(allow system-socket (socket-domain AF_UNIX))`, "socket(AF_UNIX)/socketpair: pipes between processes of one tree; bind and connect are still limited by the network rules"},
	{`(allow pseudo-tty)`, "openpty/forkpty: python pty, script, expect, node-pty"},
	{`(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))`, "the pty multiplexer openpty opens to make a new pair"},
	{`(allow file-read* file-write* (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))`, "pty slaves created inside the sandbox carry this extension; other users' and other sessions' ttys do not"},
	{`(allow file-ioctl (regex #"^/dev/ttys[0-9]+$"))`, "the caller's terminal, opened before the sandbox: isatty, tcgetattr, TIOCGWINSZ, so shells and pagers see a terminal"},
	{`(allow file-write-data (regex #"^/dev/fd/[0-9]+$"))`, "reopening an fd the process already holds: > /dev/stderr, bash process substitution >(...); grants no new file"},
	{`(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))`, "dyld registers DTrace probes of node, python and ruby at start; denied, every run would log a denial"},
}

// sysctl is one sysctl-read grant: a name, or a prefix when prefix is set.
type sysctl struct {
	name   string
	prefix bool
	reason string
}

// sysctls are read-only sysctls; writes stay denied by (deny default).
var sysctls = []sysctl{
	{"hw.ncpu", false, "nproc, make -j, python os.cpu_count(), node os.cpus()"},
	{"hw.activecpu", false, "sysconf(_SC_NPROCESSORS_ONLN): getconf, libuv's thread pool"},
	{"hw.logicalcpu", false, "CPU counts: python multiprocessing, node os.availableParallelism()"},
	{"hw.logicalcpu_max", false, "CPU counts: sysconf(_SC_NPROCESSORS_CONF)"},
	{"hw.physicalcpu", false, "CPU counts: build tools sizing parallel jobs"},
	{"hw.physicalcpu_max", false, "CPU counts: build tools sizing parallel jobs"},
	{"hw.perflevel", true, "performance/efficiency core counts (hw.perflevel0.logicalcpu): Go and node runtimes"},
	{"hw.nperflevels", false, "number of core types, read with hw.perflevel*"},
	{"hw.memsize", false, "physical memory: node os.totalmem(), heap sizing in runtimes"},
	{"hw.pagesize", false, "getpagesize(3), sysconf(_SC_PAGESIZE): allocators"},
	{"hw.pagesize_compat", false, "getpagesize(3) of processes running under Rosetta"},
	{"hw.machine", false, "uname -m, python platform.machine()"},
	{"hw.model", false, "machine model (Mac14,2): python platform, hardware checks in build scripts"},
	{"hw.cputype", false, "CPU type: dyld slice selection, arch(1), node process.arch checks"},
	{"hw.cpusubtype", false, "CPU subtype: dyld slice selection"},
	{"hw.cpufamily", false, "CPU family: libc and JITs choose tuned routines"},
	{"hw.byteorder", false, "byte order probes of configure scripts"},
	{"hw.cachelinesize", false, "cache geometry: allocators and JITs (V8)"},
	{"hw.l1dcachesize", false, "cache geometry: allocators and JITs (V8)"},
	{"hw.l2cachesize", false, "cache geometry: allocators and JITs (V8)"},
	{"hw.cpufrequency", false, "node os.cpus() speed field"},
	{"hw.tbfrequency", false, "timebase frequency: converting mach_absolute_time"},
	{"hw.vectorunit", false, "SIMD availability probe"},
	{"hw.optional.", true, "CPU feature flags (hw.optional.arm.FEAT_*, hw.optional.avx2_0): libc string routines, numpy, V8"},
	{"machdep.cpu.", true, "CPU brand and features: node os.cpus(), python platform.processor()"},
	{"kern.argmax", false, "sysconf(_SC_ARG_MAX): xargs, find -exec +, shells sizing argument lists"},
	{"kern.hostname", false, "hostname, uname -n, git's default committer identity"},
	{"kern.ostype", false, "uname -s, python platform.system()"},
	{"kern.osrelease", false, "uname -r, node os.release()"},
	{"kern.version", false, "uname -v"},
	{"kern.osversion", false, "sw_vers -buildVersion"},
	{"kern.osproductversion", false, "sw_vers -productVersion, python platform.mac_ver()"},
	{"kern.osvariant_status", false, "os_variant(3) checks libSystem makes at start"},
	{"kern.secure_kernel", false, "read by libSystem at start"},
	{"kern.maxfiles", false, "fd table sizing: ulimit -n, libuv"},
	{"kern.maxfilesperproc", false, "fd table sizing: ulimit -n, python resource, libuv"},
	{"kern.maxproc", false, "sysconf(_SC_CHILD_MAX): shells and make"},
	{"kern.ngroups", false, "sysconf(_SC_NGROUPS_MAX): id, getgroups"},
	{"kern.usrstack64", false, "main thread's stack base: Go and JVM runtimes"},
	{"kern.boottime", false, "uptime, node os.uptime()"},
	// IMPORTANT: kern.proc.pid.N answers for any pid, not only this sandbox's:
	// it reveals the name, uid and parent of other processes (not their
	// arguments or environment, which are kern.procargs2 and stay denied).
	{"kern.proc.pid.", true, "ps -p, pgrep and runtimes looking up a process by pid"},
	{"kern.proc.pgrp.", true, "job-control shells and killpg helpers list their process group"},
	{"sysctl.proc_cputype", false, "arch(1) and Rosetta-aware tools read the running process's CPU type"},
	{"sysctl.proc_translated", false, "Rosetta 2 detection: node, python platform, Homebrew"},
	{"vm.loadavg", false, "uptime, node os.loadavg(), python os.getloadavg()"},
}

// service is one mach-lookup grant.
type service struct {
	name   string
	reason string
}

// services are the mach services every sandboxed call may look up.
var services = []service{
	{"com.apple.system.opendirectoryd.libinfo", "getpwuid/getgrgid: whoami, id, ls -l owner names, git's default identity, python pwd, node os.userInfo()"},
	{"com.apple.system.opendirectoryd.membership", "group membership (mbr_* in libc): id -G, permission checks that resolve groups"},
	{"com.apple.system.notification_center", "notify(3): libc's timezone and resolver change checks (date, localtime in python and node)"},
	{"com.apple.cfprefsd.daemon", "CFPreferences daemon: the xcrun shims behind /usr/bin/git and /usr/bin/python3, sw_vers"},
	{"com.apple.cfprefsd.agent", "CFPreferences per-user agent, as above"},
	{"com.apple.bsd.dirhelper", "confstr(_CS_DARWIN_USER_TEMP_DIR, _CS_DARWIN_USER_CACHE_DIR): xcrun's cache, Foundation's temporary directory"},
	{"com.apple.FSEvents", "file-system event streams: node fs.watch (libuv), git fsmonitor, watchman; events only, no file access"},
}

// networkRules apply only with NetworkFull.
var networkRules = []rule{
	{`(allow network*)`, "network access was granted: TCP, UDP and unix sockets anywhere, including DNS through /private/var/run/mDNSResponder"},
	{`(allow system-socket)`, "AF_SYSTEM and AF_ROUTE sockets: interface lists, network change notifications"},
}

// networkSysctls apply only with NetworkFull.
var networkSysctls = []sysctl{
	{"net.routetable.", true, "routing table and interface lists: getifaddrs users (node os.networkInterfaces()), route, netstat"},
}

// networkServices apply only with NetworkFull.
var networkServices = []service{
	{"com.apple.SystemConfiguration.configd", "proxy and network configuration (SCDynamicStore): curl, git, python urllib, scutil"},
	{"com.apple.SystemConfiguration.DNSConfiguration", "resolver configuration read by getaddrinfo"},
	{"com.apple.trustd", "certificate trust evaluation: Go's crypto/x509 (gh), curl and git over https"},
	{"com.apple.trustd.agent", "per-user certificate trust evaluation, as above"},
	{"com.apple.ocspd", "certificate revocation checks during trust evaluation"},
	{"com.apple.SecurityServer", "Keychain and legacy certificate APIs: git-credential-osxkeychain, security(1)"},
	{"com.apple.networkd", "Network.framework path evaluation used by URLSession-based tools"},
}
