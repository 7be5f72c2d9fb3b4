//go:build linux && !amd64

package linux

// legacyWriteNotifyRules: architectures other than amd64 have only the *at
// forms of these calls.
func legacyWriteNotifyRules(n func(string, uint32, string, ...ArgCond) SeccompRule) []SeccompRule {
	return nil
}
