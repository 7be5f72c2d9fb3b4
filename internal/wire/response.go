package wire

// Response is what one request came to: exactly one of Result (a
// command) and FS (a file-system change) is set.
type Response struct {
	Result *Result
	FS     *FSResult
}

// CallID is the call_id the response echoes.
func (r Response) CallID() string {
	if r.FS != nil {
		return r.FS.CallID
	}
	return r.Result.CallID
}

// ExitCode is the command's (or the fs change's) exit status.
func (r Response) ExitCode() int {
	if r.FS != nil {
		return r.FS.ExitCode
	}
	return r.Result.ExitCode
}
