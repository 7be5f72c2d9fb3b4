//go:build linux && !amd64

package seccomp

// legacyWriteNotifyRules: architectures other than amd64 have only the *at
// forms of these calls.
func legacyWriteNotifyRules(n func(string, uint32, string, ...ArgCond) SeccompRule) []SeccompRule {
	return nil
}

// legacyReadNotifyRules: only openat elsewhere.
func legacyReadNotifyRules(n func(string, uint32, string, ...ArgCond) SeccompRule, reason string) []SeccompRule {
	return nil
}

// legacyModeCalls: only the *at forms elsewhere.
func legacyModeCalls() []modeCall { return nil }
