//go:build linux

// Package linux is the Linux backend: it compiles a policy.Policy into a
// Plan for this kernel (Compile, with what Probe found), and launches the
// command under it (Start), then reports what it saw (Process.Wait,
// EndSupervision, Resources). Mechanism only: what is allowed was decided
// before Compile.
//
//	plan, err := linux.Compile(pol, linux.Probe(), linux.Options{})
//	pr, err := linux.Start(plan, spec)
//	ws, ru, err := pr.Wait()
//
// The pipeline, file by file:
//
//   - plan.go: Compile → Plan, for what Probe (probe.go) found; its
//     namespaces in plan_namespaces.go, the downgrades that hang on the
//     supervisor in plan_supervisor.go, StageSpec the part a launch applies
//     in the command's process, and String (plan_string.go) what `sbx
//     explain` prints; landlock.go and the seccomp package (the filter's table
//     and its BPF compiler, spelt seccomp.X here) the kernel rules it holds,
//     cgroup.go and rlimit.go its limits, denyglob.go, maskinode.go and
//     placeholder.go (the missing carve-outs: watched, or a placeholder)
//     what the mounts cannot do alone.
//   - launch.go: Start, the entry point, picks the launch mode and sets up
//     what every launch shares (supervisor, control groups, placeholders,
//     the watched carve-outs' directories, which sweep.go checks after the
//     call).
//   - thread.go: LaunchThread (root, or no user namespace to be had): a
//     locked OS thread enters the namespaces it may make, restricts itself
//     and forks the command; pidinit.go is the PID namespace's init.
//     prestart.go makes the namespaces, or a stage, ahead of the plan.
//   - stage_parent.go: LaunchStage, unprivileged: sbx re-executes itself in
//     new user, PID and network namespaces and sends it the plan (stage.go
//     is what crosses); stage_child.go is what runs there (StageMain):
//     the same steps, then exec of the command, or PID 1 above it.
//   - namespaces.go, mounts.go: the steps inside the new namespaces, shared
//     by the launcher thread and the stage; caps.go the capability drop.
//   - process.go: the started call, Wait and Signal.
//   - supervision.go: the seccomp supervisor in sbx, package supervisor
//     (it decodes a notified call, decides it, resolves its paths, and
//     carries out the network with the network off), started from what it
//     may know of the plan (Plan.supervisorInput); loadFilter loads the
//     filter on the launcher thread. proxy.go: the network by domain.
//   - doctor.go: `sbx doctor`.
//
// Guarantees: every restriction is applied before the command's first
// instruction; a step that fails fails the launch (ErrUserNS and ErrStart
// say which kind), it never runs less restricted than its Plan.
package linux
