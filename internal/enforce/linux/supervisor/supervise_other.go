//go:build linux && !amd64

package supervisor

// atForm: architectures other than amd64 have only the *at forms.
func atForm(nr uint32, a [6]uint64) (call, bool) { return atFormNative(nr, a) }
