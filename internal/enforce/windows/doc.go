// Package windows compiles a Policy into a Windows Plan and runs it: a job
// object holds the whole process tree, and a write-restricted token confines
// writes to the writable roots.
//
//	plan, err := windows.Compile(pol, windows.Options{CallSID: sid})
//	proc, err := windows.Start(plan, cmd) // windows only
//
// Mechanism, and why this one: the command runs with a restricted token made
// with WRITE_RESTRICTED from sbx's own token. Every write access check is then
// made twice, once with the token's normal SIDs and once with its restricting
// SIDs only, and both must pass. The restricting SIDs are a random SID made
// for this one call, Everyone and the logon SID; each writable root gets an
// inheritable allow ACE for the call SID and each existing carve-out an
// inheritable deny ACE for it, both removed when the call ends. Reads are
// checked with the normal SIDs only, so ordinary tools keep working.
//
// A low-integrity token with labelled roots was the alternative. It was not
// chosen: labelling a root Low is a mandatory label other programs see and
// keep (a crash leaves the workspace writable by every low-integrity process
// on the machine), and a low-integrity process is refused writes to its own
// profile and registry, which breaks shells and package managers. A leftover
// ACE for a random SID grants nothing: no future token holds that SID.
//
// Guarantees: the command starts suspended, is put in the job, and only then
// resumes, so no process of the call runs outside the job; breakaway is not
// allowed; the job is killed when sbx's handle closes (sbx exits or is
// killed) and when the timeout fires. Every gap is a Downgrade in the Plan:
// see Compile.
package windows
