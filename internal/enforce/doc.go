// Package enforce is what a platform backend is asked to start: the Command
// of one call and the Linux capability names (--cap-add). The backends live
// in enforce/<os>; each compiles a policy.Policy into a Plan, launches the
// Command under it, and fills a report.Report (package report holds the
// shared vocabulary of outcomes). enforce/host picks the backend of this
// platform. Whether what a backend's supervisor saw is forbidden is a
// policy decision, made in policy/denial.
package enforce
