package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// fakeBackend records the steps Run takes on it; each step's outcome is
// set by the case.
type fakeBackend struct {
	prepareErr   error
	startErr     error
	waitErr      error
	runFor       time.Duration
	steps        []string
	durationSeen int64 // rep.DurationMS when finish ran
}

func (b *fakeBackend) prepare(rep *report.Report) error {
	b.steps = append(b.steps, "prepare")
	rep.Enforcement.Platform = "fake"
	return b.prepareErr
}

func (b *fakeBackend) run(ctx context.Context, rep *report.Report) (error, error) {
	b.steps = append(b.steps, "run")
	time.Sleep(b.runFor)
	return b.waitErr, b.startErr
}

func (b *fakeBackend) finish(rep *report.Report) {
	b.steps = append(b.steps, "finish")
	b.durationSeen = rep.DurationMS
}

func (b *fakeBackend) exit(rep *report.Report) {
	b.steps = append(b.steps, "exit")
	rep.ExitCode = 3
}

func (b *fakeBackend) close() { b.steps = append(b.steps, "close") }

func TestRunOn(t *testing.T) {
	refused := errors.New("refused")
	startErr := fmt.Errorf("%w: cmd: %w", ErrStart, syscall.ENOENT)
	setupErr := errors.New("stage: send plan: broken pipe")
	waitFailed := errors.New("wait4: no child")
	tests := []struct {
		name      string
		b         fakeBackend
		wantErr   error
		wantSteps []string
		wantExit  int
		// dispatch sets a BeforeStart hook, which returns dispatchErr.
		dispatch    bool
		dispatchErr error
	}{
		{name: "ran", b: fakeBackend{runFor: 20 * time.Millisecond},
			wantSteps: []string{"prepare", "run", "finish", "exit", "close"}, wantExit: 3},
		{name: "refused", b: fakeBackend{prepareErr: refused}, wantErr: refused,
			wantSteps: []string{"prepare", "close"}},
		{name: "exec failed", b: fakeBackend{startErr: startErr}, wantErr: startErr,
			wantSteps: []string{"prepare", "run", "close"}, wantExit: execFailureStatus(startErr)},
		{name: "setup failed", b: fakeBackend{startErr: setupErr}, wantErr: setupErr,
			wantSteps: []string{"prepare", "run", "close"}},
		{name: "exec failure seen by wait", b: fakeBackend{waitErr: startErr}, wantErr: startErr,
			wantSteps: []string{"prepare", "run", "finish", "close"}, wantExit: execFailureStatus(startErr)},
		{name: "wait failed", b: fakeBackend{waitErr: waitFailed}, wantErr: waitFailed,
			wantSteps: []string{"prepare", "run", "finish", "close"}},
		// A server's dispatch comes after the compile, before anything is
		// made: a refusal there starts nothing.
		{name: "dispatched", b: fakeBackend{}, dispatch: true,
			wantSteps: []string{"prepare", "before start", "run", "finish", "exit", "close"}, wantExit: 3},
		{name: "dispatch refused", b: fakeBackend{}, dispatch: true, dispatchErr: refused, wantErr: refused,
			wantSteps: []string{"prepare", "before start", "close"}},
		{name: "refused before dispatch", b: fakeBackend{prepareErr: refused}, dispatch: true, wantErr: refused,
			wantSteps: []string{"prepare", "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			var c Call
			if tt.dispatch {
				c.BeforeStart = func() error {
					b.steps = append(b.steps, "before start")
					return tt.dispatchErr
				}
			}
			rep, err := runOn(context.Background(), c, &b)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(b.steps, tt.wantSteps) {
				t.Errorf("steps = %v, want %v", b.steps, tt.wantSteps)
			}
			if rep.ExitCode != tt.wantExit {
				t.Errorf("exit code = %d, want %d", rep.ExitCode, tt.wantExit)
			}
			if rep.Enforcement.Platform != "fake" || rep.Denials == nil || rep.Degraded == nil {
				t.Errorf("report is not prepare's, from a new report: %+v", rep)
			}
			if b.durationSeen != rep.DurationMS || rep.DurationMS < b.runFor.Milliseconds() {
				t.Errorf("duration = %d ms (finish saw %d), want at least %d, taken before finish",
					rep.DurationMS, b.durationSeen, b.runFor.Milliseconds())
			}
		})
	}
}

// fakePlan is a backendPlan with the given downgrades.
type fakePlan struct{ degraded []report.Downgrade }

func (p fakePlan) String() string                  { return "fake plan" }
func (p fakePlan) Enforcement() report.Enforcement { return report.Enforcement{Platform: "fake"} }
func (p fakePlan) Degraded() []report.Downgrade    { return p.degraded }

func TestAdmit(t *testing.T) {
	noSupervisor := report.Downgrade{Feature: "denial-reports", Reason: "no seccomp listener"}
	tests := []struct {
		name          string
		call          Call
		degraded      []report.Downgrade
		wantRefused   bool
		wantProtected []string
	}{
		{name: "nothing degraded", call: Call{Require: []report.Feature{report.FeatureDenialReports},
			Policy: policy.Policy{ProtectedNames: []string{".git"}}}, wantProtected: []string{".git"}},
		{name: "degraded, not required", call: Call{Require: []report.Feature{report.FeatureLandlock}},
			degraded: []report.Downgrade{noSupervisor}},
		{name: "degraded and required", call: Call{Require: []report.Feature{report.FeatureDenialReports}},
			degraded: []report.Downgrade{noSupervisor}, wantRefused: true},
		{name: "unrestricted protects nothing", call: Call{
			Policy: policy.Policy{Unrestricted: true, ProtectedNames: []string{".git"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := report.NewReport("test")
			err := admit(&rep, fakePlan{tt.degraded}, tt.call)
			if refused := errors.Is(err, report.ErrNotSupported); refused != tt.wantRefused || (err != nil && !refused) {
				t.Fatalf("err = %v, want refused %v", err, tt.wantRefused)
			}
			if !slices.Equal(rep.Degraded, tt.degraded) && len(rep.Degraded)+len(tt.degraded) > 0 {
				t.Errorf("degraded = %v, want %v", rep.Degraded, tt.degraded)
			}
			if rep.Enforcement.Platform != "fake" || !slices.Equal(rep.Enforcement.ProtectedNames, tt.wantProtected) {
				t.Errorf("enforcement = %+v, want the plan's with protected names %v", rep.Enforcement, tt.wantProtected)
			}
		})
	}
}

func TestKillGrace(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		want  time.Duration
	}{
		{"default", 0, DefaultKillGrace},
		{"set", 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		if got := (Call{KillGrace: tt.grace}).killGrace(); got != tt.want {
			t.Errorf("%s: killGrace = %v, want %v", tt.name, got, tt.want)
		}
	}
}
