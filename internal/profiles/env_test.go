package profiles

import (
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

// TestSecretVariable: the names and URL values of a survey of real
// credential variables are stripped; the names ordinary tools need pass.
func TestSecretVariable(t *testing.T) {
	stripped := []string{
		// Cloud SDKs.
		"AWS_ACCESS_KEY_ID=A", "AWS_SECRET_ACCESS_KEY=s", "AWS_SESSION_TOKEN=t", "AZURE_CLIENT_SECRET=s",
		"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountKey=k", "AZURE_DEVOPS_PAT=p",
		"GOOGLE_APPLICATION_CREDENTIALS=/k.json", "GOOGLE_API_KEY=k", "CLOUDSDK_AUTH_ACCESS_TOKEN=t",
		"DIGITALOCEAN_ACCESS_TOKEN=t", "HEROKU_API_KEY=k", "ARM_CLIENT_SECRET=s",
		// Package managers.
		"NPM_TOKEN=t", "NPM_AUTH=a", "NPM_CONFIG__AUTH=a", "npm_config__auth=a", "NODE_AUTH_TOKEN=t",
		"PYPI_TOKEN=t", "TWINE_PASSWORD=p", "CARGO_REGISTRY_TOKEN=t", "GEM_HOST_API_KEY=k",
		"NUGET_API_KEY=k", "COMPOSER_AUTH={}", "HOMEBREW_GITHUB_API_TOKEN=t",
		"PIP_INDEX_URL=https://u:p@pypi.example/simple",
		// CI systems and services.
		"GITHUB_TOKEN=t", "GH_TOKEN=t", "GH_PAT=p", "GITLAB_TOKEN=t", "CI_JOB_TOKEN=t", "CI_JOB_JWT=j",
		"CI_REGISTRY_PASSWORD=p", "CI_REPOSITORY_URL=https://gitlab-ci-token:t@gitlab.example/a/b.git",
		"CIRCLE_TOKEN=t", "TRAVIS_TOKEN=t", "BUILDKITE_AGENT_TOKEN=t", "VAULT_TOKEN=t",
		"DOCKER_PASSWORD=p", "DOCKER_AUTH_CONFIG={}", "SLACK_WEBHOOK_URL=https://hooks.slack.example/x",
		"DISCORD_WEBHOOK=https://d.example/x", "SENTRY_DSN=https://k@o1.ingest.sentry.example/1",
		"SENTRY_AUTH_TOKEN=t", "STRIPE_SECRET_KEY=sk", "OPENAI_API_KEY=k", "ANTHROPIC_API_KEY=k",
		"HF_TOKEN=t", "DD_API_KEY=k", "TWILIO_AUTH_TOKEN=t", "BW_SESSION=s", "OP_SESSION_my=s",
		// Passwords and keys by other spellings.
		"PGPASS=p", "PGPASSWORD=p", "MYSQL_PWD=p", "DB_PASS=p", "SMTP_PASS=p", "GPG_PASSPHRASE=p",
		"SSH_KEY_PASSPHRASE=p", "API_BEARER=b", "BEARER=b", "HTTP_AUTHORIZATION=Basic x",
		"PRIVATE_KEY_PATH=/k", "SSH_AUTH_SOCK=/run/agent.sock", "AWS_CREDS=c",
		// URL-valued names with a password in the userinfo.
		"DATABASE_URL=postgres://app:hunter2@db:5432/app", "REDIS_URL=redis://:hunter2@localhost:6379/0",
		"MONGODB_URI=mongodb://u:p@h1,h2/db?replicaSet=r", "SQLALCHEMY_DATABASE_URI=mysql://u:p@h/d",
		"CELERY_BROKER_URL=amqp://guest:guest@localhost//", "APP_DSN=pgsql://u:p@h/d",
	}
	passed := []string{
		"PATH=/usr/bin", "HOME=/home/me", "USER=me", "LOGNAME=me", "SHELL=/bin/bash", "PWD=/w", "OLDPWD=/",
		"GIT_AUTHOR_NAME=Me", "GIT_AUTHOR_EMAIL=me@example.com", "GIT_AUTHOR_DATE=now", "GIT_COMMITTER_NAME=Me",
		"XDG_RUNTIME_DIR=/run/user/1", "XDG_CONFIG_HOME=/c", "XDG_SESSION_TYPE=tty", "XDG_SESSION_ID=3",
		"LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "COLORTERM=truecolor", "TZ=UTC", "TMPDIR=/tmp",
		"SSH_TTY=/dev/pts/0", "SSH_CONNECTION=1 2 3 4", "SSH_CLIENT=1 2 3", "SSH_ASKPASS=/usr/bin/ask",
		"GIT_ASKPASS=/usr/bin/ask", "XAUTHORITY=/home/me/.Xauthority", "DISPLAY=:0", "AUTHOR=me",
		"MANPATH=/m", "PKG_CONFIG_PATH=/p", "PYTHONPATH=/p", "GOPATH=/g", "LD_LIBRARY_PATH=/l",
		"PASSENGER_APP_ENV=production", "KUBECONFIG=/home/me/.kube/config", "VAULT_ADDR=https://vault:8200",
		"DOCKER_HOST=unix:///run/docker.sock", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bus",
		"EDITOR=vi", "PAGER=less", "JAVA_HOME=/j", "GNUPGHOME=/g", "GPG_TTY=/dev/pts/0",
		// URL-valued names without a password.
		"DATABASE_URL=postgres://localhost/app", "DATABASE_URL=postgres://app@localhost/app",
		"DATABASE_URL=postgres://app:@localhost/app", "CI_SERVER_URL=https://gitlab.example",
		"GIT_URL=ssh://git@github.example:22/a/b", "HOMEPAGE_URL=https://example.com/?q=a:b@c",
		"API_URL=https://host:8443/path", "EMPTY_URL=",
		// A proxy with a password is kept: stripping it would break a
		// call that is granted the network behind that proxy.
		"HTTPS_PROXY=http://u:p@proxy:3128",
	}
	for _, kv := range stripped {
		if !secretVariable(kv) {
			t.Errorf("%s: passes, want stripped", kv)
		}
	}
	for _, kv := range passed {
		if secretVariable(kv) {
			t.Errorf("%s: stripped, want it to pass", kv)
		}
	}
}

// TestEnvPolicyURLValue: a URL-valued variable is stripped for the password
// in its value, kept without one, and the report has its name only.
func TestEnvPolicyURLValue(t *testing.T) {
	base := []string{"DATABASE_URL=postgres://app:hunter2@db/app", "REDIS_URL=redis://localhost:6379"}
	got, rep, err := EnvPolicy{}.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"REDIS_URL=redis://localhost:6379"}) || !reflect.DeepEqual(rep.Stripped, []string{"DATABASE_URL"}) {
		t.Errorf("env %q, stripped %q: want REDIS_URL kept, DATABASE_URL stripped", got, rep.Stripped)
	}
	got, _, _ = EnvPolicy{Allow: []string{"DATABASE_URL"}}.Apply(base)
	if len(got) != 2 {
		t.Errorf("allow did not keep DATABASE_URL: %q", got)
	}
}

// A regression test: Set appended to the inherited entries, so a name in
// both appeared twice and getenv (the first match) saw the inherited value.
func TestEnvPolicySetReplaces(t *testing.T) {
	out, rep, err := EnvPolicy{Set: map[string]string{"GIT_SSL_CAINFO": "/ca.pem"}}.Apply([]string{"GIT_SSL_CAINFO=/etc/ssl/ca.crt", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"PATH=/bin", "GIT_SSL_CAINFO=/ca.pem"}; !slices.Equal(out, want) || len(rep.Stripped) != 0 {
		t.Fatalf("Apply = %q (stripped %q), want %q", out, rep.Stripped, want)
	}
}
