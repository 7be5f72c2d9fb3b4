package profiles

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestGrantStoreRequestRefusals(t *testing.T) {
	ok := PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(true, nil, nil)}
	tests := []struct {
		name  string
		edit  func(*PendingRequest)
		field string
	}{
		{"no call id", func(r *PendingRequest) { r.CallID = "" }, "call_id"},
		{"no environment", func(r *PendingRequest) { r.EnvironmentID = "" }, "environment_id"},
		{"no turn", func(r *PendingRequest) { r.TurnID = "" }, "turn_id"},
		{"requests nothing", func(r *PendingRequest) { r.Requested = Profile{} }, "requested"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s GrantStore
			req := ok
			tt.edit(&req)
			var fe *strictjson.FieldError
			if err := s.Request(req); !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want FieldError %q", err, tt.field)
			}
		})
	}
	t.Run("duplicate call id", func(t *testing.T) {
		var s GrantStore
		if err := s.Request(ok); err != nil {
			t.Fatal(err)
		}
		if err := s.Request(ok); err == nil {
			t.Fatal("second request with the same call id accepted")
		}
	})
}

func TestRespondUnknownCallGrantsNothing(t *testing.T) {
	var s GrantStore
	must(t, s.Request(PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(true, nil, nil)}))
	g, err := s.Respond(Response{CallID: "nope", Granted: p(true, nil, nil), Scope: ScopeSession})
	if !errors.Is(err, ErrUnknownCall) || !reflect.DeepEqual(g, Grant{}) {
		t.Fatalf("got %+v, %v; want zero grant and ErrUnknownCall", g, err)
	}
	if e := s.Effective("local", "t1", Profile{}, UseDefault); !e.Permissions.IsEmpty() {
		t.Fatalf("unknown call id granted %s", show(e.Permissions))
	}
}

func TestRespondAnsweredTwiceOrCancelledOrTurnEnded(t *testing.T) {
	req := PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(true, nil, nil)}
	resp := Response{CallID: "c1", Granted: p(true, nil, nil), Scope: ScopeSession}
	for name, before := range map[string]func(*GrantStore){
		"answered twice": func(s *GrantStore) { _, _ = s.Respond(Response{CallID: "c1"}) },
		"cancelled":      func(s *GrantStore) { s.Cancel("c1") },
		"turn ended":     func(s *GrantStore) { s.EndTurn("t1") },
	} {
		t.Run(name, func(t *testing.T) {
			var s GrantStore
			must(t, s.Request(req))
			before(&s)
			if _, err := s.Respond(resp); !errors.Is(err, ErrUnknownCall) {
				t.Fatalf("late answer: err = %v, want ErrUnknownCall", err)
			}
			if g := s.Grants("local", "t1"); !g.Session.IsEmpty() {
				t.Fatalf("late answer granted %s", show(g.Session))
			}
		})
	}
}

func TestRespondSessionStrictIsEmptyTurnGrant(t *testing.T) {
	var s GrantStore
	must(t, s.Request(PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(true, nil, nil)}))
	g, err := s.Respond(Response{CallID: "c1", Granted: p(true, nil, nil), Scope: ScopeSession, StrictAutoReview: true})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Permissions.IsEmpty() || g.Scope != ScopeTurn || g.StrictAutoReview {
		t.Fatalf("got %+v, want empty turn grant without strict", g)
	}
	if gr := s.Grants("local", "t1"); !gr.Session.IsEmpty() || !gr.Turn.IsEmpty() || s.StrictAutoReview("t1") {
		t.Fatalf("store recorded %+v strict=%v", gr, s.StrictAutoReview("t1"))
	}
}

func TestRespondTurnGrantGoesToTheTurnThatAsked(t *testing.T) {
	var s GrantStore
	must(t, s.Request(PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(false, nil, paths(r))}))
	// The answer arrives while turn t2 is current; it still belongs to t1.
	g, err := s.Respond(Response{CallID: "c1", Granted: p(false, nil, paths(r)), StrictAutoReview: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.TurnID != "t1" {
		t.Fatalf("grant on turn %q, want t1", g.TurnID)
	}
	if got := s.Effective("local", "t2", Profile{}, UseDefault); !got.Permissions.IsEmpty() || got.StrictAutoReview {
		t.Fatalf("turn t2 sees %+v", got)
	}
	got := s.Effective("local", "t1", Profile{}, UseDefault)
	if !reflect.DeepEqual(got.Permissions, p(false, nil, paths(r))) || !got.StrictAutoReview {
		t.Fatalf("turn t1 sees %+v", got)
	}
	s.EndTurn("t1")
	if got := s.Effective("local", "t1", Profile{}, UseDefault); !got.Permissions.IsEmpty() || got.StrictAutoReview {
		t.Fatalf("after EndTurn, t1 sees %+v", got)
	}
}

func TestRespondIntersectsAndAccumulates(t *testing.T) {
	var s GrantStore
	must(t, s.Request(PendingRequest{CallID: "c1", EnvironmentID: "local", TurnID: "t1", Requested: p(false, paths(r), nil)}))
	must(t, s.Request(PendingRequest{CallID: "c2", EnvironmentID: "local", TurnID: "t2", Requested: p(true, nil, nil)}))
	// More than asked: only the requested part is kept.
	if _, err := s.Respond(Response{CallID: "c1", Granted: p(true, paths(r), paths("/etc")), Scope: ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Respond(Response{CallID: "c2", Granted: p(true, nil, nil), Scope: ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if got := s.Grants("local", "t3").Session; !reflect.DeepEqual(got, p(true, paths(r), nil)) {
		t.Fatalf("session grant %s", show(got))
	}
}

func TestGrantsAreKeyedByEnvironment(t *testing.T) {
	var s GrantStore
	must(t, s.Request(PendingRequest{CallID: "c1", EnvironmentID: "remote", TurnID: "t1", Requested: p(true, nil, nil)}))
	must(t, s.Request(PendingRequest{CallID: "c2", EnvironmentID: "remote", TurnID: "t1", Requested: p(false, paths(r), nil)}))
	_, _ = s.Respond(Response{CallID: "c1", Granted: p(true, nil, nil), Scope: ScopeSession})
	_, _ = s.Respond(Response{CallID: "c2", Granted: p(false, paths(r), nil), Scope: ScopeTurn})
	if got := s.Effective("local", "t1", Profile{}, UseDefault); !got.Permissions.IsEmpty() {
		t.Fatalf("local sees remote's grants: %s", show(got.Permissions))
	}
	if got := s.Effective("remote", "t1", Profile{}, UseDefault); !reflect.DeepEqual(got.Permissions, p(true, paths(r), nil)) {
		t.Fatalf("remote sees %s", show(got.Permissions))
	}
}

func TestEffective(t *testing.T) {
	g := Grants{Session: p(true, nil, nil), Turn: p(false, nil, paths(r+"/build"))}
	explicit := p(false, nil, paths("/sbx-test/out"))
	tests := []struct {
		name     string
		grants   Grants
		explicit Profile
		sp       SandboxPermissions
		want     EffectivePermissions
	}{
		{
			name: "require_escalated takes no sticky grants", grants: g, sp: RequireEscalated,
			want: EffectivePermissions{},
		},
		{
			name: "use_default with nothing explicit applies sticky grants implicitly", grants: g, sp: UseDefault,
			want: EffectivePermissions{
				Permissions: p(true, nil, paths(r+"/build")),
				Sources:     Sources{Session: g.Session, Turn: g.Turn},
				Implicit:    true, Preapproved: true,
			},
		},
		{
			name: "explicit permissions join the union but are not preapproved", grants: g, explicit: explicit, sp: WithAdditionalPermissions,
			want: EffectivePermissions{
				Permissions: p(true, nil, paths(r+"/build", "/sbx-test/out")),
				Sources:     Sources{Session: g.Session, Turn: g.Turn, Call: explicit},
			},
		},
		{
			name: "explicit permissions covered by the grants are preapproved", grants: g, explicit: p(false, nil, paths(r+"/build/x")), sp: WithAdditionalPermissions,
			want: EffectivePermissions{
				Permissions: p(true, nil, paths(r+"/build")),
				Sources:     Sources{Session: g.Session, Turn: g.Turn, Call: p(false, nil, paths(r+"/build/x"))},
				Preapproved: true,
			},
		},
		{
			name: "no grants, nothing explicit", sp: UseDefault,
			want: EffectivePermissions{Preapproved: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.grants.Effective(tt.explicit, tt.sp); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestGrantsNormalize(t *testing.T) {
	g, err := Grants{Turn: Profile{FileSystem: &FileSystem{Write: []string{"build"}}}}.Normalize(r)
	if err != nil || !reflect.DeepEqual(g.Turn, p(false, nil, paths(r+"/build"))) {
		t.Fatalf("got %+v, %v", g, err)
	}
	_, err = Grants{Session: Profile{FileSystem: &FileSystem{Read: []string{""}}}}.Normalize(r)
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || fe.Field != "grants.session.file_system.read[0]" {
		t.Fatalf("err = %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
