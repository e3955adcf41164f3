package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// Messages of the tests of unanswered calls, as JSONL lines.
const (
	uUser    = `{"role":"user","content":"book it"}`
	uCalls   = `{"role":"assistant","content":null,"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"B","type":"function","function":{"name":"g","arguments":"{}"}}]}`
	uResultA = `{"role":"tool","tool_call_id":"A","content":"a done"}`
	uResultB = `{"role":"tool","tool_call_id":"B","content":"not run: cancelled"}`
	uReply   = `{"role":"assistant","content":"done"}`
)

func jsonl(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// TestUnansweredCallRefused: a turn with two tool calls and one result, followed by another
// message, is refused, naming the call and the message, and nothing of the import is written.
// Before, it was accepted and the call B stayed unanswered for good (a history OpenAI's and
// Anthropic's APIs refuse). A call at the end of an append is in flight: it is accepted, and the
// next append must answer it before it moves on.
func TestUnansweredCallRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, in  string
		line, idx int
		what      string
	}{
		{"then a user message", jsonl(uUser, uCalls, uResultA, uUser), 4, 3, `tool call "B" of the message 2 before it has no result: a call must be answered (a tool message with its tool_call_id, any content) before the next user message`},
		{"then an assistant message", jsonl(uUser, uCalls, uResultA, uReply), 4, 3, `tool call "B" of the message 2 before it has no result`},
		{"no result at all", jsonl(uUser, uCalls, uUser), 3, 2, `tool call "A" of the message before it has no result (and 1 more)`},
		{"then more calls", jsonl(uUser, uCalls, uResultB, uCalls), 4, 3, `tool call "A" of the message 2 before it has no result`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := storetest.Open(t)
			_, err := s.Import(ctx, "t", strings.NewReader(tc.in), memory.AppendOptions{})
			var ie *memory.InputError
			if !errors.As(err, &ie) || ie.Line != tc.line || ie.Index != tc.idx || !strings.Contains(err.Error(), tc.what) {
				t.Fatalf("import: %v; want an *InputError at line %d, message %d, saying %q", err, tc.line, tc.idx, tc.what)
			}
			if _, err := s.History(ctx, "t"); !errors.Is(err, memory.ErrThreadNotFound) {
				t.Fatalf("the thread exists after a refused import: %v", err)
			}
		})
	}

	s, _ := storetest.Open(t)
	// In flight at the end: accepted.
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl(uUser, uCalls, uResultA)), memory.AppendOptions{}); err != nil {
		t.Fatalf("a call in flight at the end: %v", err)
	}
	// The next append moves on without answering B: refused, naming the stored message.
	_, err := s.Import(ctx, "t", strings.NewReader(jsonl(uUser)), memory.AppendOptions{})
	if ie := (*memory.InputError)(nil); !errors.As(err, &ie) || ie.Index != 0 || !strings.Contains(err.Error(), `tool call "B" of the thread's message 2 has no result`) {
		t.Fatalf("moving on in a later append: %v", err)
	}
	// A result with any content marks it answered: the conversation goes on.
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl(uResultB, uReply, uUser)), memory.AppendOptions{}); err != nil {
		t.Fatalf("after answering B: %v", err)
	}
	if h, err := s.History(ctx, "t"); err != nil || len(h) != 6 {
		t.Fatalf("history: %d messages, %v; want 6", len(h), err)
	}
}

// TestUnansweredCallLeftBefore: a thread that an earlier version let move on past an unanswered
// call (its stored open calls still hold it) is not refused every message after it: that call is
// dropped at the next message that moves on. A call the thread's last messages leave in flight
// is still refused.
func TestUnansweredCallLeftBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl(uUser, uCalls, uResultA, uResultB, uReply)), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// As an earlier version left it: a call "Z" made and never answered, the thread moved on.
	setOpen := func(open string) {
		t.Helper()
		if err := s.DB().Q().SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 5, OpenCalls: open, UpdatedAt: 1, ID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	setOpen(`["Z"]`)
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl(uUser)), memory.AppendOptions{}); err != nil {
		t.Fatalf("a thread with a call left open by an earlier version: %v", err)
	}
	// The same, with calls in flight at its end: those are refused, the old one is not named.
	if _, err := s.Import(ctx, "t", strings.NewReader(jsonl(uCalls, uResultA)), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Q().SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 8, OpenCalls: `["Z","B"]`, UpdatedAt: 1, ID: "t"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Import(ctx, "t", strings.NewReader(jsonl(uReply)), memory.AppendOptions{})
	if err == nil || !strings.Contains(err.Error(), `tool call "B" of the thread's message 7 has no result`) || strings.Contains(err.Error(), "more") {
		t.Fatalf("moving on with B in flight and Z left before: %v", err)
	}
}
