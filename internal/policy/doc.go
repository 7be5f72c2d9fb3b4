// Package policy turns a sandbox mode, the call's cwd and writable roots and
// the effective additional permissions into a platform-neutral Policy: what
// may be read, what may be written, which subpaths stay read-only, whether
// the network is reachable. Backends in enforce/<os> compile a Policy into
// kernel rules; every decision about what is allowed is made here.
//
//	pol, err := policy.Build(policy.Request{
//		Mode: profiles.WorkspaceWrite, Cwd: "/work/repo",
//	})
//	// pol.WriteRoots: [/tmp /work/repo], pol.CarveOuts: [/work/repo/.git]
//
// Guarantees: every path in a Policy is absolute and clean; write roots are
// readable; carve-outs are inside a write root; a path that does not exist is
// never silently replaced by a wider one.
package policy
