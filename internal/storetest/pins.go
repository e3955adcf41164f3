package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// PinnedSeq is a tool result of the airline conversation (reservation LQ940Q) that every
// compaction at the limits the pin tests use moves out of the active context unless it is
// pinned; its call is message 15.
const PinnedSeq = 16

// ActiveHas reports whether the active context holds message seq of hist verbatim.
func ActiveHas(a memory.Active, hist []memory.Entry, seq int64) bool {
	want, _ := json.Marshal(hist[seq-1].Message)
	for _, e := range a.Entries {
		if got, _ := json.Marshal(e.Message); e.Seq == seq && e.CompactionID == 0 && string(got) == string(want) {
			return true
		}
	}
	return false
}

// CheckPinned fails unless the active context of thread holds messages 15 and 16 verbatim,
// marked pinned, with its size as Thread reports it.
func CheckPinned(t testing.TB, s *memory.Store, thread string, hist []memory.Entry, when string) memory.Active {
	t.Helper()
	ctx := context.Background()
	a, err := s.Active(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{PinnedSeq - 1, PinnedSeq} {
		if !ActiveHas(a, hist, seq) {
			t.Fatalf("%s: message %d is not in the active context verbatim", when, seq)
		}
	}
	for _, e := range a.Entries {
		if (e.Seq == PinnedSeq || e.Seq == PinnedSeq-1) != e.Pinned && e.CompactionID == 0 {
			t.Fatalf("%s: message %d pinned %v", when, e.Seq, e.Pinned)
		}
	}
	th, err := s.Thread(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if th.ActiveTokens != a.Tokens || th.ActiveMessages != len(a.Entries) {
		t.Fatalf("%s: Thread says %d tokens in %d messages, the active context has %d in %d",
			when, th.ActiveTokens, th.ActiveMessages, a.Tokens, len(a.Entries))
	}
	return a
}
