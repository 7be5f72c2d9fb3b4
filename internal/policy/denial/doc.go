// Package denial decides whether an operation a supervisor saw is one the
// policy forbids, and keeps the denials of one call, de-duplicated and
// capped. It is pure Go: the mechanism that sees the operations (the seccomp
// supervisor in enforce/linux) resolves paths and addresses and asks here.
//
//	c := denial.NewChecker(pol, denial.Extra{Devices: ttys})
//	if v := c.Path(denial.Create, "/work/repo/.git"); !v.Allowed {
//		// v.Cause == denial.CarveOut, v.At == "/work/repo/.git"
//	}
//	log := denial.NewLog(denial.DefaultCap)
//	log.Add(report.Denial{Operation: "create", Path: "/work/repo/.git", ...})
//	ds, dropped := log.Denials()
//
// Guarantees: Path and Network answer only from the policy, the same way the
// kernel rules compiled from it do (Landlock for write roots and devices,
// read-only mounts for carve-outs and masks), so an operation the policy
// allows is never called forbidden. A Log holds at most its cap of distinct
// denials whatever the number of events; the rest are counted as dropped.
package denial
