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

// TestActiveLightLongThread: a context long enough to be read in parts at once (see
// readRange) reads as the whole read does, message for message, in order, before and after a
// compaction's view.
func TestActiveLightLongThread(t *testing.T) {
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a support agent.")}
	for i := range 5000 {
		if i%50 == 7 {
			call := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: call, Type: "function",
					Function: chat.FunctionCall{Name: "get_order", Arguments: fmt.Sprintf(`{"order_id":"W%06d"}`, i)}}}},
				chat.Message{Role: chat.RoleTool, ToolCallID: call, Content: []byte(fmt.Sprintf(`"order W%06d: shipped"`, i))})
			continue
		}
		msgs = append(msgs, chat.TextMessage([]string{chat.RoleUser, chat.RoleAssistant}[i%2], fmt.Sprintf("message %d about order W%06d", i, i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		whole, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		light, err := s.Active(ctx, "t", memory.ReadOptions{Light: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(light.Entries), len(whole.Entries); got != want || light.Tokens != whole.Tokens {
			t.Fatalf("%s: light read %d entries, %d tokens; whole %d, %d", when, got, light.Tokens, want, whole.Tokens)
		}
		for i, w := range whole.Entries {
			l := light.Entries[i]
			if l.Seq != w.Seq || l.Tokens != w.Tokens || l.Text() != w.Text() || l.Message.Role != w.Message.Role ||
				l.Message.ToolCallID != w.Message.ToolCallID || !slices.EqualFunc(l.Message.ToolCalls, w.Message.ToolCalls, func(a, b chat.ToolCall) bool {
				return a.ID == b.ID && a.Function.Name == b.Function.Name && a.Function.Arguments == b.Function.Arguments
			}) {
				t.Fatalf("%s: entry %d: light %+v, whole %+v", when, i, l, w)
			}
		}
	}
	check("before compaction")
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: a.Tokens / 2, Strategy: compact.StrategyHybrid})
	if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	check("after a hybrid compaction")
}

// TestActiveLightSeqGap: a thread whose seqs have a gap (history is append-only through the
// store, so rows deleted behind its back stand for damage) reads light as it reads whole: the
// parts of a long read close up over the missing rows, in order, wherever a gap falls (within a
// chunk of a part, on a chunk's edge, in the last part).
func TestActiveLightSeqGap(t *testing.T) {
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a support agent.")}
	for i := range 5000 {
		msgs = append(msgs, chat.TextMessage([]string{chat.RoleUser, chat.RoleAssistant}[i%2], fmt.Sprintf("message %d", i)))
	}
	if _, err := s.Append(ctx, "gap", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().DB.ExecContext(ctx, "DELETE FROM messages WHERE thread_id = 'gap' AND seq IN (100, 101, 513, 2600, 4999)"); err != nil {
		t.Fatal(err)
	}
	whole, err := s.Active(ctx, "gap")
	if err != nil {
		t.Fatal(err)
	}
	light, err := s.Active(ctx, "gap", memory.ReadOptions{Light: true})
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(es []memory.Entry) []int64 {
		out := make([]int64, len(es))
		for i, e := range es {
			out[i] = e.Seq
		}
		return out
	}
	if got, want := seqs(light.Entries), seqs(whole.Entries); !slices.Equal(got, want) || len(want) != 5001-5 {
		t.Fatalf("light read %d entries, whole %d (of 4996); seqs equal: %v", len(got), len(want), slices.Equal(got, want))
	}
	for i, w := range whole.Entries {
		if l := light.Entries[i]; l.Text() != w.Text() || l.Tokens != w.Tokens {
			t.Fatalf("entry %d (seq %d): light %q, whole %q", i, w.Seq, l.Text(), w.Text())
		}
	}
}

// TestActiveLightWhileAppending: a second process appends to a long thread while it is read
// in parts (see readRange) again and again. Every read is one snapshot's: the seqs 1 to the
// thread's last seq as the read saw it, each message its own text, none from after it, and
// its counts those of its entries.
func TestActiveLightWhileAppending(t *testing.T) {
	ctx := context.Background()
	s, path := storetest.Open(t)
	text := func(i int) string { return fmt.Sprintf("message %d about order W%06d", i, i) }
	msgs := make([]chat.Message, 6000)
	for i := range msgs {
		msgs[i] = chat.TextMessage([]string{chat.RoleUser, chat.RoleAssistant}[i%2], text(i+1))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := memory.Open(ctx, path) // the second process's store: a handle of its own
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	done := make(chan error, 1)
	stop := make(chan struct{})
	appended := make(chan struct{}, 1) // an append was made since the reader last looked
	go func() {
		n := len(msgs)
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			n++
			m := chat.TextMessage([]string{chat.RoleUser, chat.RoleAssistant}[(n-1)%2], text(n))
			if _, err := other.Append(ctx, "t", []chat.Message{m}, memory.AppendOptions{}); err != nil {
				done <- err
				return
			}
			select {
			case appended <- struct{}{}:
			default:
			}
		}
	}()
	reads := 20
	if testing.Short() {
		reads = 6
	}
	var seen []int // the thread's length as each read saw it
	for i := range reads {
		if i > 0 {
			// However the machine schedules the two, an append lands between two reads (and
			// others go on during them).
			select {
			case <-appended:
			case err := <-done:
				t.Fatalf("the appender stopped: %v", err)
			}
		}
		a, err := s.Active(ctx, "t", memory.ReadOptions{Light: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(a.Entries), a.Thread.Messages; got != want || got < len(msgs) {
			t.Fatalf("read %d entries of a thread of %d messages (at least %d)", got, want, len(msgs))
		}
		for i, e := range a.Entries {
			if e.Seq != int64(i+1) || e.Text() != text(i+1) {
				t.Fatalf("entry %d: seq %d, %q", i, e.Seq, e.Text())
			}
		}
		seen = append(seen, a.Thread.Messages)
		if got, want := a.Tokens, memory.PromptTokens(a.Entries); got != want {
			t.Fatalf("the read counts %d tokens, its entries %d", got, want)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen[len(seen)-1] == seen[0] {
		t.Fatalf("no message was appended while the thread was read (%d messages in every read): nothing was tested", seen[0])
	}
}
