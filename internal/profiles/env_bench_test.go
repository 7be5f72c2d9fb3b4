package profiles

import (
	"fmt"
	"testing"
)

// BenchmarkEnvApply is the env policy of one call over a server's
// environment (issue 31: sbx serve applies it on every call).
func BenchmarkEnvApply(b *testing.B) {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm-256color",
		"SSH_AUTH_SOCK=/tmp/ssh/agent", "GITHUB_TOKEN=x", "HTTPS_PROXY=http://u:p@proxy:3128", "GOPATH=/home/u/go"}
	for i := range 30 {
		env = append(env, fmt.Sprintf("SOME_SETTING_%d=value", i))
	}
	for b.Loop() {
		if _, _, err := (EnvPolicy{}).Apply(env); err != nil {
			b.Fatal(err)
		}
	}
}
