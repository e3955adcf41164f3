package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestViewKeepsSeveralSummaries: a compaction whose active context keeps an earlier summary as
// a block of its own beside its new one stores both in its view; the context read back shows
// them in order, each with its range, after the system prompt; search, a copy and a revert see
// the same, on both backends.
func TestViewKeepsSeveralSummaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are an agent.")}
	for i := 1; i <= 30; i++ {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d about order W%06d: when does it arrive, and which carrier ships it to the warehouse?", i, i)),
			chat.TextMessage("assistant", fmt.Sprintf("answer %d: order W%06d is on its way with the usual carrier, due within three working days of today", i, i)))
	}
	if _, err := s.Append(ctx, "t", msgs[:41], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2048})
	first, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || first.Status != memory.StatusApplied {
		t.Fatalf("first compaction: %+v, %v", first, err)
	}
	if _, err := s.Append(ctx, "t", msgs[41:], memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Active(ctx, "t", memory.ReadOptions{Light: true})
	if err != nil {
		t.Fatal(err)
	}
	// A second summary of seqs from..to, the first kept before it as it is.
	at := slices.IndexFunc(a.Entries, func(e memory.Entry) bool { return e.CompactionID == 0 && e.Seq == first.ToSeq+1 })
	end := slices.IndexFunc(a.Entries, func(e memory.Entry) bool { return e.Seq == 55 })
	if a.Entries[1].CompactionID != first.ID || at != 2 || end < at {
		t.Fatalf("active context before: the summary at %d, seq %d at %d", slices.IndexFunc(a.Entries, func(e memory.Entry) bool { return e.CompactionID != 0 }), first.ToSeq+1, at)
	}
	from, to := a.Entries[at].Seq, a.Entries[end-1].Seq
	id, err := s.Compactions().Insert(ctx, memory.NewCompaction{Report: memory.Report{Thread: "t", Status: memory.StatusRunning,
		Reason: compact.ReasonForced, Strategy: "test"}, Base: a.Current, LastSeq: int64(a.Thread.Messages)})
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("[summary of messages %d-%d]\nthe second block", from, to)
	entries := slices.Concat(a.Entries[:2], []memory.Entry{memory.SummaryEntry(id, "user", text, 12, from, to)}, a.Entries[end:])
	sum := text
	if err := s.Compactions().ApplySummary(ctx, memory.Commit{Thread: "t", ID: id, Base: a.Current, Entries: entries, ViewSeq: int64(a.Thread.Messages),
		Report:      memory.Report{Summary: &sum, SummaryTokens: 12, FromSeq: from, ToSeq: to, TokensAfter: memory.PromptTokens(entries), MessagesAfter: len(entries)},
		SummaryRole: "user"}); err != nil {
		t.Fatal(err)
	}
	row, err := s.DB().Q().GetCompaction(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"summary":%d,"others":[{"id":%d,"from":%d,"to":%d}]}`, id, first.ID, first.FromSeq, first.ToSeq)
	if row.View != want {
		t.Errorf("stored view %s, want %s", row.View, want)
	}
	check := func(when string, a memory.Active, ids ...int64) {
		t.Helper()
		var got []int64
		for i, e := range a.Entries {
			if e.CompactionID != 0 {
				got = append(got, e.CompactionID)
				if i != len(got) {
					t.Errorf("%s: summary %d at %d, want right after the system prompt and the summaries before it", when, e.CompactionID, i)
				}
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("%s: summaries %v, want %v", when, got, ids)
		}
		if a.Entries[0].Message.Role != "system" || a.Entries[len(ids)+1].Seq != 55 {
			t.Errorf("%s: context starts %q and goes on at seq %d, want the system prompt and seq 55", when, a.Entries[0].Message.Role, a.Entries[len(ids)+1].Seq)
		}
		if a.Tokens != memory.PromptTokens(a.Entries) {
			t.Errorf("%s: %d tokens, entries add up to %d", when, a.Tokens, memory.PromptTokens(a.Entries))
		}
	}
	for _, light := range []bool{false, true} {
		b, err := s.Active(ctx, "t", memory.ReadOptions{Light: light})
		if err != nil {
			t.Fatal(err)
		}
		check("read back", b, first.ID, id)
		if b.Entries[1].CoversFrom != first.FromSeq || b.Entries[1].CoversTo != first.ToSeq || b.Entries[2].CoversFrom != from || b.Entries[2].CoversTo != to {
			t.Errorf("ranges %d-%d, %d-%d; want %d-%d, %d-%d", b.Entries[1].CoversFrom, b.Entries[1].CoversTo, b.Entries[2].CoversFrom, b.Entries[2].CoversTo, first.FromSeq, first.ToSeq, from, to)
		}
		if b.Summary != id || b.FromSeq != from || b.ToSeq != to || b.Current != id {
			t.Errorf("summary %d (%d-%d), current %d; want the newest, %d (%d-%d)", b.Summary, b.FromSeq, b.ToSeq, b.Current, id, from, to)
		}
	}
	th, err := s.Thread(ctx, "t")
	if a2, _ := s.Active(ctx, "t"); err != nil || th.ActiveTokens != a2.Tokens || th.ActiveMessages != len(a2.Entries) {
		t.Errorf("thread counts %d tokens, %d messages; the context has %d, %d (%v)", th.ActiveTokens, th.ActiveMessages, a2.Tokens, len(a2.Entries), err)
	}
	rep, err := s.Report(ctx, id)
	if err != nil || rep.View == nil || !slices.Equal(rep.View.Summaries, []memory.SummaryRef{{ID: first.ID, From: first.FromSeq, To: first.ToSeq}}) {
		t.Errorf("report view %+v (%v), want the first summary named", rep.View, err)
	}
	// Search in the active context finds both summaries, and no message either covers.
	hits, err := s.Search(ctx, "W000003", memory.SearchOptions{Thread: "t"})
	if err != nil || len(hits) == 0 || !slices.ContainsFunc(hits, func(h memory.SearchHit) bool { return h.CompactionID == first.ID && h.InActiveContext }) ||
		slices.ContainsFunc(hits, func(h memory.SearchHit) bool { return h.CompactionID == 0 && h.Seq <= to && h.InActiveContext }) {
		t.Errorf("search in context: %+v, %v; want the first summary, no covered message", hits, err)
	}
	// A copy renumbers both summaries of the view.
	dst, _ := storetest.Open(t)
	if _, err := memory.Copy(ctx, s, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := dst.Active(ctx, "t"); err != nil {
		t.Fatal(err)
	} else {
		var ids []int64
		for _, e := range b.Entries {
			if e.CompactionID != 0 {
				ids = append(ids, e.CompactionID)
			}
		}
		if len(ids) != 2 || b.Entries[2].Message.Text() != text {
			t.Errorf("copy: summaries %v, second %q", ids, b.Entries[2].Message.Text())
		}
	}
	// Revert brings back the context of the first compaction plus what was appended.
	if _, err := s.Revert(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	b, err := s.Active(ctx, "t")
	if err != nil || b.Summary != first.ID || len(b.Entries) != 2+int(b.Thread.Messages)-int(first.ToSeq) {
		t.Errorf("after revert: summary %d, %d entries (%v); want %d and the messages after %d", b.Summary, len(b.Entries), err, first.ID, first.ToSeq)
	}
}
