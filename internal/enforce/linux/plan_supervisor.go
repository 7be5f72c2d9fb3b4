//go:build linux

package linux

import (
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file is the plan's bookkeeping of what the seccomp supervisor
// gives: the downgrades that read otherwise without it.

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
// could not be set up at launch (supervise.Result.Downgrades says so).
func (p *Plan) UnsupervisedDowngrades() []report.Downgrade {
	out := slices.Clone(p.Downgrades)
	for i, d := range p.unsupervised {
		out[i] = d
	}
	return append(out, p.unsupervisedOnly...)
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
		Reason: "turned off by the caller: operations the sandbox blocks are not reported" + seccomp.UnsupervisedSetgid})
	p.SeccompProg, p.Supervise = p.SeccompPlainProg, SuperviseOff
	p.unsupervised, p.unsupervisedOnly, p.supervisorFeatures = nil, nil, nil
}
