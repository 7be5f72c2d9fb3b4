package journal

import "testing"

// TestWriterRecords: a Writer reads back what it took, the records of
// Later among them (Records flushes them first), as Replay would.
func TestWriterRecords(t *testing.T) {
	w, err := Open(t.TempDir(), "s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := basic("s")
	for _, r := range want[:5] {
		if err := w.Append(Record{Type: r.Type, SessionID: r.SessionID, Time: r.Time, Data: r.Data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Later(Record{Type: want[5].Type, SessionID: "s", Time: want[5].Time, Data: want[5].Data}); err != nil {
		t.Fatal(err)
	}
	got, err := w.Records()
	if err != nil {
		t.Fatal(err)
	}
	if d := sameRecords(got, want[:6]); d != "" {
		t.Error(d)
	}
}
