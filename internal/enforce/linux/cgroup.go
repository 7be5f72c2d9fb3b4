//go:build linux

package linux

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// Limit mechanisms, as reported in resources.mechanism.
const (
	mechV2     = "cgroup-v2"
	mechV1     = "cgroup-v1"
	mechRlimit = "rlimit"
)

// The controllers sbx sets limits with.
const (
	ctlMemory = "memory"
	ctlPids   = "pids"
	ctlCPU    = "cpu"
)

// cgroupEnv names a delegated cgroup v2 directory for sbx to create its call
// groups in: how an unprivileged caller (systemd-run --user -p Delegate=yes,
// a container runtime) hands sbx a subtree. It must hold no processes.
const cgroupEnv = "SBX_CGROUP"

// CgroupPlan is where a call's control groups are created and what each
// enforces. Every call group is a child of these parents, named after sbx's
// pid and the call's number in this process (callGroupName), so concurrent
// calls never share one: not those of two processes, nor two calls of one
// server.
type CgroupPlan struct {
	// V2Parent is the cgroup v2 directory the call group is created in, ""
	// for none. The command is cloned straight into it (CLONE_INTO_CGROUP),
	// so nothing it starts escapes between fork and move.
	V2Parent string `json:",omitempty"`
	// V2Top is the top of the v2 hierarchy when V2Parent is sbx's own
	// subtree below it (root), where the controllers are enabled first.
	V2Top string `json:",omitempty"`
	// V2Controllers are the controllers the call group sets limits with.
	V2Controllers []string `json:",omitempty"`
	// V1 maps a controller to sbx's own cgroup v1 directory of it; the call
	// group is created below, so the caller's own limits still apply.
	V1 map[string]string `json:",omitempty"`
}

// cgroupHost is where this process's cgroups are.
type cgroupHost struct {
	v2Mount string
	// v2Own is sbx's own v2 group; v1Own maps controllers to sbx's own v1
	// group of each.
	v2Own string
	v1Own map[string]string
}

// findCgroups reads the cgroup mounts and, with own, sbx's place in each
// hierarchy (/proc/self/cgroup): only a call with limits uses it (a v1
// group of sbx's own to create the call group below), so a call without
// (danger-full-access through a server, say) reads only the mounts.
func findCgroups(own bool) cgroupHost {
	h := cgroupHost{v1Own: map[string]string{}}
	mounts := cgroupMountsNow()
	// A cgroup2 mount makes the kernel list the v2 hierarchy ("0::...") in
	// every /proc/PID/cgroup (cgrp_dfl_visible), so the mount alone says
	// the v2 hierarchy is there.
	h.v2Mount = mounts[""]
	if !own {
		return h
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			if m, ok := mounts[""]; ok {
				h.v2Own = filepath.Join(m, parts[2])
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if m, ok := mounts[c]; ok {
				h.v1Own[c] = filepath.Join(m, parts[2])
			}
		}
	}
	return h
}

// cgroupMounts is the parse of the last mountinfo text cgroupMountsNow
// read, and that text's generation (mountwatch.go): the parse is redone
// exactly when the text was read anew.
var cgroupMounts struct {
	mu     sync.Mutex
	gen    uint64
	mounts map[string]string
}

// cgroupMountsNow maps "" to the cgroup v2 mount and each v1 controller
// sbx uses to its mount, from sbx's own mountinfo. The map is shared:
// callers only read it.
func cgroupMountsNow() map[string]string {
	text, gen, err := readSelfMountinfoGen()
	if err != nil {
		return map[string]string{}
	}
	c := &cgroupMounts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mounts != nil && c.gen == gen {
		return c.mounts
	}
	mounts := map[string]string{} // "" for v2, else a v1 controller
	s := bufio.NewScanner(bytes.NewReader(text))
	for s.Scan() {
		// id parent maj:min root mountpoint opts... - fstype source superopts
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			mounts[""] = fields[4]
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				if slices.Contains([]string{ctlMemory, ctlPids, ctlCPU}, o) {
					mounts[o] = fields[4]
				}
			}
		}
	}
	c.gen, c.mounts = gen, mounts
	return mounts
}

// setLimits decides, controller by controller, what enforces l: a cgroup v2
// controller, else a v1 one, else an rlimit set by the stage; what none can
// enforce is a downgrade. A plan without a PID namespace gets a call group
// even without limits, for the whole-tree kill the namespace would give.
func (p *Plan) setLimits(l report.Limits) {
	p.Limits = l
	if !l.IsZero() && p.ServerUserNS && p.Launch == LaunchThread {
		// Inside the unprivileged server's user namespace the cgroups are
		// the caller's as for sbx run, where rlimits in a stage stand in
		// for the controllers it cannot write: a call with limits takes
		// the stage launch sbx run takes (see stageInUserNS).
		p.stageInUserNS()
	}
	if l.IsZero() && p.NewPIDNS {
		return
	}
	h := findCgroups(!l.IsZero())
	cg := &CgroupPlan{V1: map[string]string{}}
	v2Avail := map[string]bool{}
	// src is the group whose cgroup.controllers lists what the call group
	// can be given.
	src := ""
	if parent := os.Getenv(cgroupEnv); parent != "" {
		cg.V2Parent, src = parent, parent
	} else if p.Launch != LaunchStage && h.v2Mount != "" && unix.Access(h.v2Mount, unix.W_OK) == nil {
		// A v2 group with controllers enabled may hold no processes, so
		// sbx's own group (which holds sbx) cannot be the parent: root gets
		// a dedicated subtree at the top instead.
		cg.V2Top, cg.V2Parent, src = h.v2Mount, filepath.Join(h.v2Mount, "sbx"), h.v2Mount
	}
	if src != "" && !l.IsZero() {
		// What the parent offers matters only to a limit (use, below).
		if b, err := os.ReadFile(filepath.Join(src, "cgroup.controllers")); err == nil {
			for _, c := range strings.Fields(string(b)) {
				v2Avail[c] = true
			}
		}
	}
	var mechs []string
	use := func(ctl string, rl *Rlimit, why string) {
		switch {
		case v2Avail[ctl]:
			cg.V2Controllers = append(cg.V2Controllers, ctl)
			mechs = append(mechs, mechV2)
		case h.v1Own[ctl] != "" && p.Launch != LaunchStage && unix.Access(h.v1Own[ctl], unix.W_OK) == nil:
			cg.V1[ctl] = h.v1Own[ctl]
			mechs = append(mechs, mechV1)
		case rl != nil && p.Launch == LaunchStage:
			p.Rlimits = append(p.Rlimits, *rl)
			mechs = append(mechs, mechRlimit)
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureLimits, Reason: why})
		default:
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureLimits,
				Reason: "no writable " + ctl + " cgroup (v2 or v1) for this user: the " + ctl + " limit is not enforced"})
		}
	}
	if l.MemoryBytes > 0 {
		use(ctlMemory, &Rlimit{Resource: unix.RLIMIT_AS, Name: "RLIMIT_AS", Value: uint64(l.MemoryBytes)},
			"no writable memory cgroup: memory is capped per process by RLIMIT_AS (address space, not resident memory), so an allocation beyond it fails instead of being OOM-killed, and the tree as a whole is not capped")
	}
	if l.Pids > 0 {
		// Before Linux 5.14 RLIMIT_NPROC counts every process of the user
		// on the host, not of the call: it would cap unrelated work, so it
		// is not used there.
		// The kernel never applies RLIMIT_NPROC to the host's uid 0
		// (copy_process exempts INIT_USER): root in a rootful container
		// runs its stage as that uid, so the rlimit would bind nothing.
		var rl *Rlimit
		if kernelAtLeast(5, 14) && !uidIsHostRoot() {
			rl = &Rlimit{Resource: unix.RLIMIT_NPROC, Name: "RLIMIT_NPROC", Value: uint64(l.Pids)}
		}
		use(ctlPids, rl, "no writable pids cgroup: processes are capped by RLIMIT_NPROC, counted per user in the call's user namespace (the stage's own threads included)")
	}
	if l.CPUs > 0 {
		use(ctlCPU, nil, "")
	}
	slices.Sort(mechs)
	if mechs = slices.Compact(mechs); len(mechs) > 0 {
		p.LimitMechanism = strings.Join(mechs, "+")
	}
	if len(cg.V1) == 0 {
		cg.V1 = nil
	}
	if cg.V2Parent != "" || cg.V1 != nil {
		p.Cgroup = cg
	}
}

// uidIsHostRoot reports whether sbx's uid is uid 0 of the user namespace
// above its own (/proc/self/uid_map), which is the host's uid 0 in a rootful
// container. Unreadable, it says yes: the rlimit is then not counted on.
func uidIsHostRoot() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true
	}
	uid := uint64(os.Getuid())
	for _, line := range strings.Split(string(b), "\n") {
		var inside, outside, n uint64
		if _, err := fmt.Sscan(line, &inside, &outside, &n); err == nil && uid >= inside && uid-inside < n {
			return outside+uid-inside == 0
		}
	}
	return false
}

// kernelAtLeast reports whether the running kernel is at least major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}
