package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// pinnedSeq is a tool result of the airline conversation (reservation LQ940Q) that every
// compaction at the limits below moves out of the active context unless it is pinned; its
// call is message 15.
const pinnedSeq = 16

// activeHas reports whether the active context holds message seq of hist verbatim.
func activeHas(a memory.Active, hist []memory.Entry, seq int64) bool {
	want, _ := json.Marshal(hist[seq-1].Message)
	for _, e := range a.Entries {
		if got, _ := json.Marshal(e.Message); e.Seq == seq && e.CompactionID == 0 && string(got) == string(want) {
			return true
		}
	}
	return false
}

// checkPinned fails unless the active context of thread holds messages 15 and 16 verbatim,
// marked pinned, with its size as Thread reports it.
func checkPinned(t *testing.T, s *memory.Store, thread string, hist []memory.Entry, when string) memory.Active {
	t.Helper()
	ctx := context.Background()
	a, err := s.Active(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{pinnedSeq - 1, pinnedSeq} {
		if !activeHas(a, hist, seq) {
			t.Fatalf("%s: message %d is not in the active context verbatim", when, seq)
		}
	}
	for _, e := range a.Entries {
		if (e.Seq == pinnedSeq || e.Seq == pinnedSeq-1) != e.Pinned && e.CompactionID == 0 {
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

// TestPinSurvivesCompaction: a pinned tool result stays in the active context verbatim, with
// its call, through every strategy, a second compaction and a revert; the context stays within
// the limit, counting it; unpinned, the next compaction moves it out.
func TestPinSurvivesCompaction(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{memory.StrategySummarize, memory.StrategyMask, memory.StrategyHybrid, memory.StrategyWindow} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := openStore(t)
			importFile(t, s, "t", airline)
			hist, err := s.History(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			set := memory.Settings{TokenLimit: 4000, Strategy: strategy, SummaryMaxTokens: 600}
			if strategy == memory.StrategyMask {
				set.TokenLimit = 7000 // masking alone cannot reach 4,000
			}
			c := compact.New(s, extractiveCascade(t, s), set)
			// Without the pin, the compaction moves message 16 out (or masks it).
			probe, _ := openStore(t)
			importFile(t, probe, "t", airline)
			pc := compact.New(probe, extractiveCascade(t, probe), set)
			if _, err := pc.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
				t.Fatal(err)
			}
			if a, _ := probe.Active(ctx, "t"); activeHas(a, hist, pinnedSeq) {
				t.Fatalf("without a pin, message %d stays: the test shows nothing", pinnedSeq)
			}

			p, err := c.Pin(ctx, "t", pinnedSeq)
			if err != nil {
				t.Fatal(err)
			}
			if p.Seq != pinnedSeq || p.FromSeq != pinnedSeq-1 || p.ToSeq != pinnedSeq {
				t.Fatalf("pin %+v, want message 16 with its unit 15..16", p)
			}
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %s %v", rep.Status, err)
			}
			a := checkPinned(t, s, "t", hist, "after the compaction")
			if a.Tokens > set.Budget() || rep.TokensAfter != a.Tokens {
				t.Fatalf("after the compaction: %d tokens (report %d), limit %d", a.Tokens, rep.TokensAfter, set.Budget())
			}
			if _, err := s.Append(ctx, "t", []memory.Message{memory.TextMessage("user", strings.Repeat("one more thing ", 20))}, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			second, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			checkPinned(t, s, "t", hist, "after a second compaction")
			if second.Status == memory.StatusApplied {
				if _, err := s.Revert(ctx, *second.ID); err != nil {
					t.Fatal(err)
				}
				checkPinned(t, s, "t", hist, "after a revert")
			}
			if err := s.Unpin(ctx, "t", pinnedSeq-1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
				t.Fatal(err)
			}
			if a, _ := s.Active(ctx, "t"); activeHas(a, hist, pinnedSeq) {
				t.Fatalf("unpinned, message %d stays after a compaction", pinnedSeq)
			}
		})
	}
}

// TestPinRefused: a pin that cannot fit, a message that does not exist, a call without its
// result, and an unpin of what no pin holds are refused, saying why; nothing is pinned.
func TestPinRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openStore(t)
	importFile(t, s, "t", airline)
	small := &compact.Compactor{Store: s, Settings: memory.Settings{TokenLimit: 2000}}
	_, err := small.Pin(ctx, "t", 40) // a 2,835-byte flight list: over what 2,000 tokens leave
	if !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("pin over the limit: %v", err)
	}
	if _, err := s.Pin(ctx, "t", 63); !errors.Is(err, memory.ErrMessageNotFound) {
		t.Fatalf("pin of message 63 of 62: %v", err)
	}
	if _, err := s.Pin(ctx, "nope", 1); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("pin in an unknown thread: %v", err)
	}
	if err := s.Unpin(ctx, "t", 5); !errors.Is(err, memory.ErrNotPinned) {
		t.Fatalf("unpin of a message not pinned: %v", err)
	}
	call := memory.Message{Role: "assistant", ToolCalls: []memory.ToolCall{{ID: "c1", Type: "function", Function: memory.FunctionCall{Name: "f", Arguments: "{}"}}}}
	if _, err := s.Append(ctx, "t", []memory.Message{memory.TextMessage("user", "go"), call}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pin(ctx, "t", 64); !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "c1") {
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
	s, _ := openStore(t)
	importFile(t, s, "t", airline)
	served := memory.ThreadSettings{Window: &memory.ServedWindow{Model: "m", Tokens: 2000, Source: "n_ctx 2000 of GET /props", Ratio: 1, Limit: 2000}}
	if err := s.SetThreadSettings(ctx, "t", served); err != nil {
		t.Fatal(err)
	}
	def := &compact.Compactor{Store: s, Settings: memory.Settings{TokenLimit: memory.DefaultTokenLimit}}
	for name, pin := range map[string]func() (memory.Pinned, error){
		"Store.Pin":     func() (memory.Pinned, error) { return s.Pin(ctx, "t", 40) },
		"Compactor.Pin": func() (memory.Pinned, error) { return def.Pin(ctx, "t", 40) },
	} {
		if _, err := pin(); !errors.Is(err, memory.ErrPinRefused) || !strings.Contains(err.Error(), "over the limit 2000") {
			t.Fatalf("%s in a thread served in 2,000 tokens: %v", name, err)
		}
	}
	own := 100000
	served.TokenLimit = &own
	if err := s.SetThreadSettings(ctx, "t", served); err != nil {
		t.Fatal(err)
	}
	if _, err := def.Pin(ctx, "t", 40); err != nil {
		t.Fatalf("pin in a thread whose own limit is 100,000: %v", err)
	}
}

// TestPinsLeaveRoomToCompact: the pins a thread accepts never leave it where no compaction
// can bring it back within its limit. Messages are pinned one by one until a pin is refused;
// then the conversation goes on, and each compaction must fit the context in the limit. With
// room for a 32-token summary only, the last pins left the compactor a summary under the 128
// tokens a deep plan needs: every compaction was ineffective and the thread stayed over its
// limit.
func TestPinsLeaveRoomToCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openStore(t)
	var msgs []memory.Message
	for i := range 30 {
		msgs = append(msgs, memory.TextMessage("user", fmt.Sprintf("note %d: %s", i, strings.Repeat("alpha beta gamma delta ", 30))),
			memory.TextMessage("assistant", fmt.Sprintf("noted %d", i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, extractiveCascade(t, s), memory.Settings{TokenLimit: 2048})
	pinned := 0
	for seq := int64(1); seq <= 59; seq += 2 {
		if _, err := c.Pin(ctx, "t", seq); errors.Is(err, memory.ErrPinRefused) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pinned++
	}
	if pinned == 0 || pinned == 30 {
		t.Fatalf("%d of 30 messages pinned: the test wants the limit to refuse one", pinned)
	}
	for turn := range 5 {
		if _, err := s.Append(ctx, "t", []memory.Message{memory.TextMessage("user", fmt.Sprintf("turn %d", turn)), memory.TextMessage("assistant", "ok")}, memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err := c.Compact(ctx, "t", compact.Options{Emergency: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if a.Tokens > 2048 {
			t.Fatalf("turn %d, %d messages pinned: the active context is %d tokens after compaction (%s: %s), over the limit 2048", turn, pinned, a.Tokens, rep.Status, rep.Detail)
		}
	}
}

// TestPinCopied: memory.Copy carries the pins, so the copy's active context is the source's.
func TestPinCopied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := openStore(t)
	importFile(t, src, "t", airline)
	c := compact.New(src, extractiveCascade(t, src), memory.Settings{TokenLimit: 4000})
	if _, err := c.Pin(ctx, "t", pinnedSeq); err != nil {
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
	a := checkPinned(t, dst, "t", hist, "in the copy")
	b, _ := src.Active(ctx, "t")
	if !slices.EqualFunc(a.Entries, b.Entries, func(x, y memory.Entry) bool { return x.Seq == y.Seq && x.Pinned == y.Pinned }) {
		t.Fatal("the copy's active context differs from the source's")
	}
}

// TestRequestedCompaction: a compaction the model asked for runs whatever the trigger and is
// recorded with reason requested.
func TestRequestedCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openStore(t)
	importFile(t, s, "t", airline)
	c := compact.New(s, extractiveCascade(t, s), memory.Settings{TokenLimit: 100000})
	rep, err := c.Compact(ctx, "t", compact.Options{Requested: true})
	if err != nil || rep.Status != memory.StatusApplied || rep.Reason != memory.ReasonRequested {
		t.Fatalf("requested compaction: %s %s %v", rep.Status, rep.Reason, err)
	}
	stored, err := s.Report(ctx, *rep.ID)
	if err != nil || stored.Reason != memory.ReasonRequested {
		t.Fatalf("stored report: %s %v", stored.Reason, err)
	}
}
