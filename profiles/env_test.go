package profiles

import (
	"path"
	"reflect"
	"slices"
	"testing"
)

func TestEnvPolicy(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=t", "aws_secret_access_key=s", "API_KEY=k", "DB_PASSWORD=p", "EDITOR=vi", "MONKEY=m"}
	tests := []struct {
		name         string
		p            EnvPolicy
		want         []string
		wantStripped []string
	}{
		{"default strips secrets", EnvPolicy{}, []string{"PATH=/bin", "HOME=/h", "EDITOR=vi"},
			[]string{"API_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "MONKEY", "aws_secret_access_key"}},
		{"allow keeps a secret", EnvPolicy{Allow: []string{"GITHUB_TOKEN"}}, []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=t", "EDITOR=vi"},
			[]string{"API_KEY", "DB_PASSWORD", "MONKEY", "aws_secret_access_key"}},
		{"clean", EnvPolicy{Mode: EnvClean}, []string{"PATH=/bin", "HOME=/h"},
			[]string{"API_KEY", "DB_PASSWORD", "EDITOR", "GITHUB_TOKEN", "MONKEY", "aws_secret_access_key"}},
		{"allow-list glob", EnvPolicy{Mode: EnvAllowList, Allow: []string{"P*"}}, []string{"PATH=/bin"},
			[]string{"API_KEY", "DB_PASSWORD", "EDITOR", "GITHUB_TOKEN", "HOME", "MONKEY", "aws_secret_access_key"}},
		{"set is never stripped and comes last", EnvPolicy{Mode: EnvClean, Set: map[string]string{"MY_TOKEN": "x"}}, []string{"PATH=/bin", "HOME=/h", "MY_TOKEN=x"},
			[]string{"API_KEY", "DB_PASSWORD", "EDITOR", "GITHUB_TOKEN", "MONKEY", "aws_secret_access_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep, err := tt.p.Apply(base)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("env = %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(rep.Stripped, tt.wantStripped) {
				t.Errorf("stripped = %q, want %q", rep.Stripped, tt.wantStripped)
			}
			for _, s := range rep.Stripped {
				if slices.ContainsFunc(got, func(kv string) bool { return kv == s+"=" }) {
					t.Errorf("report leaks a value")
				}
			}
		})
	}
}

func TestEnvPolicyRefusals(t *testing.T) {
	if _, _, err := (EnvPolicy{Mode: "all"}).Apply(nil); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, _, err := (EnvPolicy{Set: map[string]string{"A=B": "x"}}).Apply(nil); err == nil {
		t.Error("name with = accepted")
	}
}

// matchName must agree with path.Match, which it replaces for speed.
func TestMatchName(t *testing.T) {
	pats := []string{"*TOKEN*", "TOKEN", "*KEY", "KEY*", "A*B*C", "*", "**", "A**B", "*A*A*", "", "X?Y", "[AB]*", `A\*`}
	names := []string{"", "TOKEN", "GH_TOKEN", "TOKENS", "KEY", "SSH_KEY", "KEYRING", "ABC", "AXBXC", "AC", "ABBC", "AA", "AXA", "A", "XZY", "BOB", "A*"}
	for _, p := range pats {
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := matchName(p, n); got != want {
				t.Errorf("matchName(%q, %q) = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}

func FuzzMatchName(f *testing.F) {
	f.Add("*TOKEN*", "GH_TOKEN")
	f.Add("A*B*", "AB")
	f.Fuzz(func(t *testing.T, p, n string) {
		want, err := path.Match(p, n)
		if err != nil {
			return
		}
		if got := matchName(p, n); got != want {
			t.Errorf("matchName(%q, %q) = %v, path.Match says %v", p, n, got, want)
		}
	})
}
