package memory_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestPinRefused: a pin that cannot fit, a message that does not exist, a call without its
// result, and an unpin of what no pin holds are refused, saying why; nothing is pinned.
func TestPinRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	small := &compact.Compactor{Store: s, Settings: compact.Settings{TokenLimit: 2000}}
	_, err := small.Pin(ctx, "t", 40) // a 2,835-byte flight list: over what 2,000 tokens leave
	if !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("pin over the limit: %v", err)
	}
	if _, err := s.Pin(ctx, "t", 63, compact.PinBudget(compact.Settings{})); !errors.Is(err, memory.ErrMessageNotFound) {
		t.Fatalf("pin of message 63 of 62: %v", err)
	}
	if _, err := s.Pin(ctx, "nope", 1, compact.PinBudget(compact.Settings{})); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("pin in an unknown thread: %v", err)
	}
	if err := s.Unpin(ctx, "t", 5); !errors.Is(err, memory.ErrNotPinned) {
		t.Fatalf("unpin of a message not pinned: %v", err)
	}
	call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: "{}"}}}}
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", "go"), call}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pin(ctx, "t", 64, compact.PinBudget(compact.Settings{})); !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("pin of a call without its result: %v", err)
	}
	if pins, err := s.Pins(ctx, "t"); err != nil || len(pins) != 0 {
		t.Fatalf("pins after refusals: %v %v", pins, err)
	}
}

// TestPinInServedWindow: a thread that memctl serve fits in the window its upstream reports
// (token_limit auto: settings.window) has its pins checked against that window, not against
// the config's default limit: a pin that fits 128,000 tokens but not the 2,000 the thread is
// served in would leave every later turn over the limit (the proxy answers 400 to each).
// A thread's own token_limit still wins.
func TestPinInServedWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	served := compact.ThreadSettings{Window: &compact.Window{Model: "m", Tokens: 2000, Source: "n_ctx 2000 of GET /props", Ratio: 1, Limit: 2000}}
	if err := compact.SaveThreadSettings(ctx, s, "t", served); err != nil {
		t.Fatal(err)
	}
	def := &compact.Compactor{Store: s, Settings: compact.Settings{TokenLimit: compact.DefaultTokenLimit}}
	for name, pin := range map[string]func() (memory.Pinned, error){
		"Store.Pin":     func() (memory.Pinned, error) { return s.Pin(ctx, "t", 40, compact.PinBudget(compact.Settings{})) },
		"Compactor.Pin": func() (memory.Pinned, error) { return def.Pin(ctx, "t", 40) },
	} {
		if _, err := pin(); !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "over the limit 2000") {
			t.Fatalf("%s in a thread served in 2,000 tokens: %v", name, err)
		}
	}
	own := 100000
	served.TokenLimit = &own
	if err := compact.SaveThreadSettings(ctx, s, "t", served); err != nil {
		t.Fatal(err)
	}
	if _, err := def.Pin(ctx, "t", 40); err != nil {
		t.Fatalf("pin in a thread whose own limit is 100,000: %v", err)
	}
}

// TestPinCopied: memory.Copy carries the pins, so the copy's active context is the source's.
func TestPinCopied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := storetest.Open(t)
	storetest.Import(t, src, "t", corpus.Airline)
	c := compact.New(src, storetest.ExtractiveCascade(t, src), compact.Settings{TokenLimit: 4000})
	if _, err := c.Pin(ctx, "t", storetest.PinnedSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	dst, err := memory.Open(ctx, testdb.Name(t, "copy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	res, err := memory.Copy(ctx, src, dst)
	if err != nil || res.Pins != 1 {
		t.Fatalf("copy: %+v %v", res, err)
	}
	hist, _ := src.History(ctx, "t")
	a := storetest.CheckPinned(t, dst, "t", hist, "in the copy")
	b, _ := src.Active(ctx, "t")
	if !slices.EqualFunc(a.Entries, b.Entries, func(x, y memory.Entry) bool { return x.Seq == y.Seq && x.Pinned == y.Pinned }) {
		t.Fatal("the copy's active context differs from the source's")
	}
}
