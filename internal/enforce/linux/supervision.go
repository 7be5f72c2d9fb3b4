//go:build linux

package linux

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// The seccomp supervisor lives in the leaf package enforce/linux/supervisor
// (imported as supervise: "supervisor" is the launch paths' name for the
// one a call holds). What it may know of a plan is supervise.Input, which
// Plan.supervisorInput fills; this file is all that joins the two: the
// launch paths hold a *supervisor, load the filter (loadFilter) and hand
// the listener over. Code here spells the supervisor's names as its
// package does (supervise.Result, supervise.Creds, ...): no alias is kept
// but CallPeer, which enforce/host uses.

// CallPeer is supervise.CallPeer: the call a socket's peer belongs to
// (enforce/host's server asks it; the one name of the supervisor package
// that something outside enforce/linux uses).
func CallPeer(fd int) (string, error) { return supervise.CallPeer(fd) }

// supervisor is the supervisor of one call, as the launch paths hold it.
type supervisor struct{ s *supervise.Supervisor }

// newSupervisor makes the supervisor of a call under plan p, from what it
// may know of p (Plan.supervisorInput).
func newSupervisor(p *Plan) (*supervisor, error) {
	s, err := supervise.New(p.supervisorInput())
	if err != nil {
		return nil, err
	}
	return &supervisor{s}, nil
}

func (s *supervisor) attach(l supervise.Listener)    { s.s.Attach(l) }
func (s *supervisor) release()                       { s.s.Release() }
func (s *supervisor) receive(sock int, stagePid int) { s.s.Receive(sock, stagePid) }
func (s *supervisor) ask()                           { s.s.Ask() }
func (s *supervisor) finish() supervise.Result       { return s.s.Finish() }

// supervisorInput is the part of p the supervisor reads.
func (p *Plan) supervisorInput() supervise.Input {
	in := supervise.Input{
		Policy:         p.Policy,
		Devices:        p.Devices,
		Sockets:        p.Sockets,
		NewUserNS:      p.NewUserNS,
		Placeholders:   p.Placeholders,
		ReadOnlyMounts: p.ReadOnlyMounts,
		MaskedMounts:   p.MaskedMounts,
		MaskedLinks:    p.MaskedLinks,
		MaskedInodes:   p.maskedInodes,
		Capabilities:   p.Capabilities,
		Creds:          p.Creds,
		CredsCanKeep:   p.credsCanKeep,
	}
	if lp := p.Landlock; lp != nil {
		in.LandlockUnix = lp.HandledFS&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0
		in.AbstractScoped = !p.NewNetNS && lp.Scoped&unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET != 0
	}
	return in
}

// loadFilter loads the plan's seccomp filter on the calling thread, with a
// listener when the plan is supervised. Under SuperviseBestEffort a filter
// that cannot have a listener is replaced by the same filter without its
// notification rules; under SuperviseRequired that is an
// UnsupportedFeatureError for "denial-reports".
func loadFilter(s *StageSpec) (supervise.Listener, error) {
	if s.Supervise == SuperviseOff {
		return supervise.Listener{FD: -1}, seccomp.LoadSeccomp(s.SeccompProg)
	}
	fd, err := seccomp.LoadSeccompListener(s.SeccompProg)
	if err == nil {
		return supervise.Listener{FD: fd}, nil
	}
	reason := "no seccomp listener: " + err.Error()
	if errors.Is(err, unix.EBUSY) {
		reason = "no seccomp listener: sbx itself runs under a filter with one (a sandbox inside a sandbox)"
	}
	if s.Supervise == SuperviseRequired || len(s.SeccompPlainProg) == 0 {
		return supervise.Listener{FD: -1}, &report.UnsupportedFeatureError{Feature: report.FeatureDenialReports, Reason: reason}
	}
	if err := seccomp.LoadSeccomp(s.SeccompPlainProg); err != nil {
		return supervise.Listener{FD: -1}, err
	}
	return supervise.Listener{FD: -1, Unavailable: reason + "; operations the sandbox blocks are not reported" + seccomp.UnsupervisedSetgid}, nil
}
