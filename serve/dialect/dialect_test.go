package dialect

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

// sentOf fills the messages of s from shared on as NewSent's caller does: message i says i.
func sentOf(s *Sent, shared int) *Sent {
	for i := shared; i < len(s.Msgs); i++ {
		s.Msgs[i] = chat.TextMessage(chat.RoleUser, fmt.Sprint(i))
		s.Hashes[i] = HashBytes([]byte(fmt.Sprint(i)))
	}
	return s
}

func checkSent(t *testing.T, what string, s *Sent, n int) {
	t.Helper()
	if len(s.Msgs) != n || len(s.Hashes) != n {
		t.Fatalf("%s: %d messages, %d hashes, want %d", what, len(s.Msgs), len(s.Hashes), n)
	}
	for i, m := range s.Msgs {
		if m.Text() != fmt.Sprint(i) || s.Hashes[i] != HashBytes([]byte(fmt.Sprint(i))) {
			t.Fatalf("%s: message %d is %q", what, i, m.Text())
		}
	}
}

// A request that resends the whole of the previous one and adds to it extends the previous
// one's arrays in place (no copy of what it resends); only one request does so, and neither
// the previous request nor another one parsed against it sees what it writes.
func TestNewSentExtendsInPlace(t *testing.T) {
	s1 := sentOf(NewSent(nil, 0, 100), 0)
	s2 := sentOf(NewSent(s1, 100, 102), 100)
	checkSent(t, "s2", s2, 102)
	if &s2.Msgs[0] != &s1.Msgs[0] || &s2.Hashes[0] != &s1.Hashes[0] {
		t.Fatal("the second request copied the first's messages: want them extended in place")
	}
	if cap(s2.Msgs) != len(s2.Msgs) || cap(s2.Hashes) != len(s2.Hashes) {
		t.Fatal("Msgs and Hashes are not capped: an append elsewhere would write in the room")
	}
	// Another request parsed against s1 (a retry, or two at once): a copy of its own.
	s3 := NewSent(s1, 100, 103)
	if &s3.Msgs[0] == &s1.Msgs[0] {
		t.Fatal("a second request extended s1 in place too")
	}
	for i := 100; i < 103; i++ {
		s3.Msgs[i] = chat.TextMessage(chat.RoleUser, "other")
	}
	checkSent(t, "s1", s1, 100)
	checkSent(t, "s2 after s3", s2, 102)
	// A copy of s2 (as serve keeps it) is extended once, the next request in place.
	kept := *s2
	s4 := sentOf(NewSent(&kept, 102, 104), 102)
	checkSent(t, "s4", s4, 104)
	if &s4.Msgs[0] != &s1.Msgs[0] {
		t.Fatal("the request after a copy of s2 copied its messages")
	}
	if s5 := NewSent(s2, 102, 104); &s5.Msgs[0] == &s1.Msgs[0] {
		t.Fatal("s2 was extended twice: through its copy and itself")
	}
	// A request that shares fewer than all of prev's messages, or none more: copies.
	if s6 := NewSent(s4, 50, 60); &s6.Msgs[0] == &s1.Msgs[0] {
		t.Fatal("a request sharing 50 of 104 messages was written over them")
	}
	checkSent(t, "s4 after s6", s4, 104)
	// Messages not the Sent's own (serve put the history's in their place): copied.
	hist := slices.Clone(s4.Msgs)
	other := *s4
	other.Msgs = hist
	if s7 := NewSent(&other, 104, 106); &s7.Msgs[0] == &s1.Msgs[0] {
		t.Fatal("extended the arrays of messages that are not the Sent's")
	}
}

// Requests parsed at once against the same previous one: one extends it, the others copy,
// and none sees another's messages (run with -race).
func TestNewSentConcurrent(t *testing.T) {
	s1 := sentOf(NewSent(nil, 0, 1000), 0)
	var wg sync.WaitGroup
	out := make([]*Sent, 8)
	for k := range out {
		wg.Go(func() {
			s := NewSent(s1, 1000, 1001+k)
			for i := 1000; i < len(s.Msgs); i++ {
				s.Msgs[i] = chat.TextMessage(chat.RoleUser, fmt.Sprint(k))
			}
			out[k] = s
		})
	}
	wg.Wait()
	inPlace := 0
	for k, s := range out {
		if &s.Msgs[0] == &s1.Msgs[0] {
			inPlace++
		}
		for i := 1000; i < len(s.Msgs); i++ {
			if s.Msgs[i].Text() != fmt.Sprint(k) {
				t.Fatalf("request %d: message %d is %q", k, i, s.Msgs[i].Text())
			}
		}
	}
	if inPlace != 1 {
		t.Fatalf("%d requests extended the same arrays in place, want 1", inPlace)
	}
	checkSent(t, "s1", s1, 1000)
}
