// Package journal is the durable log of sbx serve: one append-only file per
// session recording what the session did (opened, preset intents and knob
// changes, turns, grants, approvals asked and decided, calls started and
// finished), each record on disk before its effect is acted on or
// acknowledged.
//
// It exists for two reasons. The approval audit must survive the server:
// an approval that was asked, and how it was decided, is a fact someone
// may have to answer for, so it is written and fsynced before the call it
// allows proceeds. And a restarted server must rebuild its sessions and
// grants exactly as they were acknowledged, with nothing acknowledged lost
// and nothing half-written read as a record.
//
// Writing:
//
//	w, err := journal.Open(stateDir, sessionID) // SESSION_ID.log, 0600, dir 0700
//	...
//	err = w.Append(journal.Record{Type: journal.TypeApprovalAsked, Data: data})
//	// only now ask the approver
//
// Restarting:
//
//	sessions, problems, err := journal.Replay(stateDir)
//	for _, s := range sessions {
//		w, _ := journal.Open(stateDir, s.ID) // cuts a torn tail off
//		for _, rec := range journal.Settle(s) {
//			w.Append(rec) // pending approvals: cancelled; open turns: ended
//		}
//	}
//
// Guarantees:
//   - Append returns after the record is written and fsynced (and Open
//     fsyncs the directory, so a created file's name is durable too). After
//     a failed write or fsync the Writer is poisoned: every later Append
//     fails, so nothing follows a half-written record.
//   - Later is for a record written after the fact, which gates nothing
//     (a call's call/finished): it is ordered at once and written by the
//     next group commit, within LaterDelay, or by Flush or Close; a crash
//     before loses it (see docs/log.md).
//   - Each record is framed with its length and two CRC-32C checksums
//     (header and payload; the format is in frame.go and docs/log.md).
//     Replay detects a torn or corrupt last record, drops it and reports it;
//     damage before the end is reported and replay of that session stops
//     there. No damaged record is ever returned.
//   - Payloads are decoded strictly (strictjson.Decode: exact keys, no
//     duplicates). Append checks each payload it encodes by the same rules
//     (strictjson.Check, without decoding it back), so it never writes
//     what replay would refuse. Seq numbers each session's records without
//     a gap.
//   - The record types and their payloads are one table (vocab.go), and
//     State.Apply (state.go) is the one transition function: replay,
//     Append, Pending, a server restoring a session and the live server
//     (each record it writes, after State.Check) all step it.
//   - The session's rules are checked at replay and at Append alike: an
//     approval/decided without its approval/asked, a second decided, a
//     turn ended that was not open, is rejected (a Problem; not applied).
//     A record that breaks only a server's rule (ServerOnly: data that
//     does not decode into its payload, two turns open) is kept, and a
//     server restoring the session refuses it.
//   - One Writer per session: Open locks the file (flock; not on Windows),
//     so a second server on the same directory is refused (ErrLocked).
//   - A session id is a file name only after ValidateSessionID: no path
//     separator, no leading '.', at most MaxSessionIDLen bytes.
//
// A crash test (crash_test.go) kills a writer process at every record
// boundary and at random bytes inside records and checks that replay gives
// exactly the records whose Append had returned, plus at most the one whose
// frame was whole on disk when the process died.
package journal
