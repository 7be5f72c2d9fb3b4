package serve

import (
	"fmt"
	"testing"
)

// TestWebSlots: one client holds at most maxWebConnsPerClient of the
// panel's connections, all clients together maxWebConns; a slot given
// back is taken again.
func TestWebSlots(t *testing.T) {
	var s webSlots
	for i := range maxWebConnsPerClient {
		if why := s.take("uid 1"); why != "" {
			t.Fatalf("connection %d of uid 1: %s", i, why)
		}
	}
	if why := s.take("uid 1"); why != fmt.Sprintf("%d of its are open", maxWebConnsPerClient) {
		t.Errorf("one more of uid 1: %q", why)
	}
	if why := s.take("uid 2"); why != "" {
		t.Errorf("another client, with uid 1 at its bound: %q", why)
	}
	for n := 2; s.all < maxWebConns; n++ {
		for range maxWebConnsPerClient {
			if s.all == maxWebConns {
				break
			}
			if why := s.take(fmt.Sprintf("uid %d", n+1)); why != "" {
				t.Fatalf("filling: %s", why)
			}
		}
	}
	if why := s.take("uid 99"); why != fmt.Sprintf("%d are open", maxWebConns) {
		t.Errorf("past the total: %q", why)
	}
	s.give("uid 1")
	if why := s.take("uid 99"); why != "" {
		t.Errorf("after a slot was given back: %q", why)
	}
	if s.client["uid 1"] != maxWebConnsPerClient-1 || s.all != maxWebConns {
		t.Errorf("counts: %v, %d in all", s.client, s.all)
	}
}
