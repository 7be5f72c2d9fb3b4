package enum

import (
	"encoding/json"
	"testing"
)

type color int

var colors = Names[color]{Type: "color", What: "colour", Names: []string{"red", "green"}}

func (c color) String() string                { return colors.String(c) }
func (c color) MarshalText() ([]byte, error)  { return colors.Marshal(c) }
func (c *color) UnmarshalText(b []byte) error { return colors.Unmarshal(c, b) }

func TestNames(t *testing.T) {
	if s := color(1).String(); s != "green" {
		t.Errorf("String(1) = %q", s)
	}
	if s := color(7).String(); s != "color(7)" {
		t.Errorf("String(7) = %q", s)
	}
	if _, err := json.Marshal(color(-1)); err == nil {
		t.Error("marshalled a value off the table")
	}
	var c color = 1
	err := json.Unmarshal([]byte(`"blue"`), &c)
	if err == nil || err.Error() != `unknown colour "blue" (want red, green)` || c != 1 {
		t.Errorf("unmarshal blue: %v, c=%d", err, c)
	}
	// Exact spelling only: no case folding, no trimming.
	for _, s := range []string{"Red", " red", ""} {
		if _, err := colors.Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	if err := json.Unmarshal([]byte(`"red"`), &c); err != nil || c != 0 {
		t.Errorf("unmarshal red: %v, c=%d", err, c)
	}
}
