package journal

import (
	"encoding/json"
	"testing"
)

// FuzzReplay: replay of any bytes returns only records that are the
// payloads of intact frames, in the frames' order, with increasing seq;
// damage always comes with a problem, and a stop with a stopped one.
func FuzzReplay(f *testing.F) {
	var good []byte
	for _, r := range basic("s") {
		b, _ := json.Marshal(r)
		good = append(good, encodeFrame(b)...)
	}
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(append([]byte(nil), good...), 0, 0, 0))
	f.Add([]byte(frameMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := replayData("s.log", "s", data)
		frames, fe := scanFrames(data)
		next := 0 // the frame the next record must come from, or a later one
		for i, rec := range r.session.Records {
			if i > 0 && rec.Seq <= r.session.Records[i-1].Seq {
				t.Fatalf("seq %d after %d", rec.Seq, r.session.Records[i-1].Seq)
			}
			found := false
			for ; next < len(frames) && !found; next++ {
				var fr Record
				found = json.Unmarshal(frames[next].payload, &fr) == nil && sameRecords([]Record{fr}, []Record{rec}) == ""
			}
			if !found {
				t.Fatalf("record %d (%+v) is not the payload of an intact frame", i, rec)
			}
		}
		if r.end > int64(len(data)) {
			t.Fatalf("end %d past the input's %d bytes", r.end, len(data))
		}
		if fe != nil && len(r.problems) == 0 {
			t.Fatalf("damage at %d, no problem reported", fe.off)
		}
		if r.stopped && (len(r.problems) == 0 || r.problems[len(r.problems)-1].Effect != EffectStopped) {
			t.Fatalf("stopped without a stopped problem: %v", r.problems)
		}
	})
}
