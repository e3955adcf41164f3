package compact_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// lifeOf200 is a generated life of 200 messages (lifesim.Generated, cut there).
func lifeOf200() []chat.Message { return lifesim.Generated(40)[:200] }

// knobLife replays msgs into a new thread compacted with s whenever ShouldCompact says so,
// through the offline rung, calling after(i, report) after each compaction that settled (applied
// or ineffective), i the index of the message just appended.
func knobLife(t *testing.T, msgs []chat.Message, s compact.Settings, after func(i int, s *memory.Store, rep memory.Report)) {
	t.Helper()
	ctx := context.Background()
	st, _ := storetest.Open(t)
	p, err := lifesim.Provider(st, "offline", 1)
	if err != nil {
		t.Fatal(err)
	}
	c := compact.New(st, p, s)
	for i, m := range msgs {
		if _, err := st.Append(ctx, "t", []chat.Message{m}, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		due, err := c.ShouldCompact(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !due {
			continue
		}
		rep, err := c.Compact(ctx, "t", compact.Options{})
		if rep.Status == memory.StatusFailed {
			t.Fatalf("message %d: compaction failed: %v", i, err)
		}
		if rep.Status == memory.StatusApplied || rep.Status == memory.StatusIneffective {
			after(i, st, rep)
		}
	}
	if lost := lifeLosses(t, st, "t", originalFacts(t, st, "t")); len(lost) > 0 {
		t.Fatalf("%d facts of the original messages lost, no report names them: %v", len(lost), lost)
	}
}

// wholeTurns returns how many of the newest n user turns of the thread are whole in its active
// context: every message from the turn's user message on is there, as appended.
func wholeTurns(t *testing.T, s *memory.Store, n int) int {
	t.Helper()
	ctx := context.Background()
	hist, err := s.History(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[int64]bool{}
	for _, e := range a.Entries {
		if e.CompactionID == 0 && !(e.Mark() != nil) {
			shown[e.Seq] = true
		}
	}
	whole, turns := 0, 0
	for i := len(hist) - 1; i >= 0 && turns < n; i-- {
		if !shown[hist[i].Seq] {
			return whole
		}
		if hist[i].Message.Role == chat.RoleUser {
			turns++
			whole = turns
		}
	}
	return whole
}

// TestKeepTurnsOverALife: over a 200-message life at 4,096 tokens, keep_turns 6 keeps the newest
// six user turns whole in the active context after every compaction; without it, some
// compaction cuts into them (the kept part then leaves the summary half of the target).
func TestKeepTurnsOverALife(t *testing.T) {
	t.Parallel()
	const n = 6
	for _, keep := range []int{0, n} {
		t.Run(fmt.Sprint("keep_turns=", keep), func(t *testing.T) {
			t.Parallel()
			compactions, short := 0, 0
			knobLife(t, lifeOf200(), compact.Settings{TokenLimit: 4096, KeepTurns: keep}, func(i int, s *memory.Store, rep memory.Report) {
				if rep.Status != memory.StatusApplied {
					return
				}
				compactions++
				if got := wholeTurns(t, s, n); got < n {
					short++
					if keep > 0 {
						t.Errorf("message %d, compaction %d: %d of the newest %d user turns whole (%s)", i, rep.ID, got, n, rep.Detail)
					}
				}
			})
			t.Logf("keep_turns %d: %d compactions, %d left fewer than %d turns whole", keep, compactions, short, n)
			if compactions < 3 {
				t.Fatalf("%d compactions: the life is too short to tell", compactions)
			}
			if keep == 0 && short == 0 {
				t.Fatalf("without keep_turns every compaction kept %d turns whole: the test cannot tell", n)
			}
		})
	}
}

// TestCompactEveryTurnsOverALife: over a 200-message life at 32,768 tokens (never near the
// trigger), compact_every_turns 4 gives a compaction exactly at every 4th user message since
// the latest one; without it there is none.
func TestCompactEveryTurnsOverALife(t *testing.T) {
	t.Parallel()
	const every = 4
	msgs := lifeOf200()
	for _, n := range []int{0, every} {
		t.Run(fmt.Sprint("compact_every_turns=", n), func(t *testing.T) {
			t.Parallel()
			var at []int
			knobLife(t, msgs, compact.Settings{TokenLimit: 32768, CompactEveryTurns: n}, func(i int, _ *memory.Store, rep memory.Report) {
				at = append(at, i)
			})
			// The user messages at which one is due: every 4th since the last.
			var want []int
			users := 0
			for i, m := range msgs {
				if m.Role == chat.RoleUser {
					users++
					if n > 0 && users%n == 0 {
						want = append(want, i)
					}
				}
			}
			t.Logf("compact_every_turns %d: compactions after messages %v", n, at)
			if fmt.Sprint(at) != fmt.Sprint(want) {
				t.Fatalf("compactions after messages %v, want %v", at, want)
			}
			if n > 0 && len(at) < 5 {
				t.Fatalf("%d compactions: the life is too short to tell", len(at))
			}
		})
	}
}

// TestKnobsLifeKeepsFacts: a 200-message life on the hybrid strategy with every knob set loses
// no fact that no report names, and its masked and cleared views are applied.
func TestKnobsLifeKeepsFacts(t *testing.T) {
	t.Parallel()
	s := compact.Settings{TokenLimit: 4096, Strategy: compact.StrategyHybrid, KeepTurns: 2, CompactEveryTurns: 5,
		Mask: compact.MaskSettings{KeepToolResults: 3, ExcludeTools: []string{"update_reservation_flights"}, ClearToolInputs: true, ClearThinking: true}}
	applied, cleared := 0, 0
	knobLife(t, lifeOf200(), s, func(i int, st *memory.Store, rep memory.Report) {
		if rep.Status == memory.StatusApplied {
			applied++
		}
		if rep.View != nil {
			cleared += len(rep.View.Cleared)
		}
	})
	t.Logf("%d compactions applied, %d cleared messages in their views", applied, cleared)
	if applied < 3 || cleared == 0 {
		t.Fatalf("%d compactions applied, %d messages cleared: the life tells nothing", applied, cleared)
	}
}
