package compact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestPinSurvivesCompaction: a pinned tool result stays in the active context verbatim, with
// its call, through every strategy, a second compaction and a revert; the context stays within
// the limit, counting it; unpinned, the next compaction moves it out.
func TestPinSurvivesCompaction(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{compact.StrategySummarize, compact.StrategyMask, compact.StrategyHybrid, compact.StrategyWindow} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := storetest.Open(t)
			storetest.Import(t, s, "t", corpus.Airline)
			hist, err := s.History(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			set := compact.Settings{TokenLimit: 4000, Strategy: strategy, SummaryMaxTokens: 600}
			if strategy == compact.StrategyMask {
				set.TokenLimit = 7000 // masking alone cannot reach 4,000
			}
			c := compact.New(s, storetest.ExtractiveCascade(t, s), set)
			// Without the pin, the compaction moves message 16 out (or masks it).
			probe, _ := storetest.Open(t)
			storetest.Import(t, probe, "t", corpus.Airline)
			pc := compact.New(probe, storetest.ExtractiveCascade(t, probe), set)
			if _, err := pc.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
				t.Fatal(err)
			}
			if a, _ := probe.Active(ctx, "t"); storetest.ActiveHas(a, hist, storetest.PinnedSeq) {
				t.Fatalf("without a pin, message %d stays: the test shows nothing", storetest.PinnedSeq)
			}

			p, err := c.Pin(ctx, "t", storetest.PinnedSeq)
			if err != nil {
				t.Fatal(err)
			}
			if p.Seq != storetest.PinnedSeq || p.FromSeq != storetest.PinnedSeq-1 || p.ToSeq != storetest.PinnedSeq {
				t.Fatalf("pin %+v, want message 16 with its unit 15..16", p)
			}
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %s %v", rep.Status, err)
			}
			a := storetest.CheckPinned(t, s, "t", hist, "after the compaction")
			if a.Tokens > set.Budget() || rep.TokensAfter != a.Tokens {
				t.Fatalf("after the compaction: %d tokens (report %d), limit %d", a.Tokens, rep.TokensAfter, set.Budget())
			}
			if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", strings.Repeat("one more thing ", 20))}, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			second, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			storetest.CheckPinned(t, s, "t", hist, "after a second compaction")
			if second.Status == memory.StatusApplied {
				if _, err := s.Revert(ctx, "", second.ID); err != nil {
					t.Fatal(err)
				}
				storetest.CheckPinned(t, s, "t", hist, "after a revert")
			}
			if err := s.Unpin(ctx, "t", storetest.PinnedSeq-1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
				t.Fatal(err)
			}
			if a, _ := s.Active(ctx, "t"); storetest.ActiveHas(a, hist, storetest.PinnedSeq) {
				t.Fatalf("unpinned, message %d stays after a compaction", storetest.PinnedSeq)
			}
		})
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
	s, _ := storetest.Open(t)
	var msgs []chat.Message
	for i := range 30 {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("note %d: %s", i, strings.Repeat("alpha beta gamma delta ", 30))),
			chat.TextMessage("assistant", fmt.Sprintf("noted %d", i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2048})
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
		if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", fmt.Sprintf("turn %d", turn)), chat.TextMessage("assistant", "ok")}, memory.AppendOptions{}); err != nil {
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

// TestRequestedCompaction: a compaction the model asked for runs whatever the trigger and is
// recorded with reason requested.
func TestRequestedCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 100000})
	rep, err := c.Compact(ctx, "t", compact.Options{Requested: true})
	if err != nil || rep.Status != memory.StatusApplied || rep.Reason != compact.ReasonRequested {
		t.Fatalf("requested compaction: %s %s %v", rep.Status, rep.Reason, err)
	}
	stored, err := s.Report(ctx, rep.ID)
	if err != nil || stored.Reason != compact.ReasonRequested {
		t.Fatalf("stored report: %s %v", stored.Reason, err)
	}
}
