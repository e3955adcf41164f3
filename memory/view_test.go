package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestStoredViewColumn: the view column of a compaction that masked one tool result and cut
// another is stored as this exact JSON, on both backends. The column outlives the code that
// wrote it (a later version reads it, a revert restores it, Copy copies it), so a renamed field
// or JSON tag, or a changed figure, is a change of the stored format: this test fails on it.
func TestStoredViewColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	orders := strings.Repeat("order W123456 shipped to 12 Main St on 2024-05-01 for $120.50; ", 40)
	huge := strings.Repeat("line of a very long log output 0123456789\n", 2000)
	call := func(id, name string) chat.Message {
		return chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: `{}`}}}}
	}
	msgs := []chat.Message{chat.TextMessage("system", "You are an agent."),
		chat.TextMessage("user", "where is my order?"), call("c1", "get_order"),
		{Role: "tool", ToolCallID: "c1", Content: storetest.MustJSON(orders)},
		chat.TextMessage("assistant", "It shipped."),
		chat.TextMessage("user", "why does the build fail? read the log"), call("c2", "read"),
		{Role: "tool", ToolCallID: "c2", Content: storetest.MustJSON(huge)}}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	// mask masks the older result; the newest unit keeps the context over the limit, so its
	// result is cut (on_failure keep) in the same compaction's view.
	c := compact.New(s, storetest.FailingCascade(s), compact.Settings{TokenLimit: 2048, Strategy: compact.StrategyMask})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied || rep.View == nil || len(rep.View.Masked) != 1 || len(rep.View.Cut) != 1 {
		t.Fatalf("compact: %+v, %v; want applied with one result masked and one cut", rep, err)
	}
	row, err := s.DB().Q().GetCompaction(ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"masked":[{"seq":4,"tool":"get_order","digest":"facts: W123456; $120.50; 2024-05-01","tokens":55,"orig_tokens":967,"orig_bytes":2520}],` +
		`"cut":[{"seq":8,"head":3121,"tail":1561,"tokens":1478,"orig_tokens":26006}]}`
	if row.View != want {
		t.Errorf("stored view:\n%s\nwant:\n%s", row.View, want)
	}
	if row.ViewSeq != 8 || row.FromSeq.Valid || row.ToSeq.Valid {
		t.Errorf("view_seq %d, from_seq %v, to_seq %v; want 8 and no range", row.ViewSeq, row.FromSeq, row.ToSeq)
	}
	// Read back, the view shows the placeholder and the cut result.
	a, err := s.Active(ctx, "t")
	if err != nil || len(a.Entries) != len(msgs) {
		t.Fatalf("active: %d entries, %v", len(a.Entries), err)
	}
	const placeholder = "[tool result masked to save context: call c1 (get_order), 967 tokens, 2520 bytes, kept in history; digest: facts: W123456; $120.50; 2024-05-01]"
	if got := a.Entries[3].Message.Text(); got != placeholder || a.Entries[3].Tokens != 55 {
		t.Errorf("masked result: %q (%d tokens), want %q (55)", got, a.Entries[3].Tokens, placeholder)
	}
	cut := a.Entries[7].Message.Text()
	marker := fmt.Sprintf("\n[... %d bytes cut to fit the context window; the whole result is in history ...]\n", len(huge)-3121-1561)
	if cut != huge[:3121]+marker+huge[len(huge)-1561:] || a.Entries[7].Tokens != 1478 {
		t.Errorf("cut result: %d bytes (%d tokens), want the head, %q and the tail", len(cut), a.Entries[7].Tokens, marker)
	}
}

// TestStripCutMarkersRoundTrip: the marker a cut entry shows (Entry.Marked) is the one
// StripCutMarkers finds (its pattern is made from the marker's format), whatever the count of
// bytes cut.
func TestStripCutMarkersRoundTrip(t *testing.T) {
	orig := strings.Repeat("0123456789", 300)
	for _, c := range []memory.Cut{{Head: 10, Tail: 10}, {Head: 1, Tail: 2000}, {Head: 999, Tail: 1}} {
		e := memory.Entry{Message: chat.TextMessage(chat.RoleTool, orig)}.Marked(&memory.Mark{Cut: &c, Orig: orig})
		if got, want := memory.StripCutMarkers(e.Text()), orig[:c.Head]+"\n"+orig[len(orig)-c.Tail:]; got != want {
			t.Errorf("head %d, tail %d: stripped %q, want %q", c.Head, c.Tail, got, want)
		}
	}
}
