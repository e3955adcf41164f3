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
	"github.com/memcascade/memcascade/tokencount"
)

// A life of compactions: a conversation appended a unit at a time (a turn), compacted whenever
// ShouldCompact says, through the offline rung, as an agent's host would run it.

// units splits msgs into the turns a replay appends: the leading system messages go with the
// first unit; then each user message, or an assistant message with the tool results after it.
func units(msgs []chat.Message) [][]chat.Message {
	var out [][]chat.Message
	var cur []chat.Message
	lead := true
	for _, m := range msgs {
		switch {
		case lead && (m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper):
		case m.Role == chat.RoleTool:
			lead = false
		default:
			if !lead && len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			lead = false
		}
		cur = append(cur, m)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// thrashStats is what a replay saw.
type thrashStats struct {
	turns, compactions int
	unavoidable        int // compactions at a turn whose pinned messages, newest user message and newest unit alone are over the trigger
	overTrigger        int // turns that ended over the trigger after the compaction (if any) ran, unavoidable ones aside
	tokens             int // the active context's tokens summed over the turns
	added              int // the tokens the turns appended
	pinnedNotes        int // reports whose detail says the pinned messages leave less than the headroom
	maxAfter           int // the largest tokens_after of an applied compaction
	errs               []string
}

func (l thrashStats) perHundred() float64 { return 100 * float64(l.compactions) / float64(l.turns) }

// replayLife appends turns to thread one at a time and compacts whenever ShouldCompact says.
func replayLife(t testing.TB, s *memory.Store, c *compact.Compactor, thread string, turns [][]chat.Message) thrashStats {
	t.Helper()
	ctx := context.Background()
	var st thrashStats
	sets := c.Settings.WithDefaults()
	trigger := int(float64(sets.Budget()) * sets.TriggerRatio)
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	pinned := 0
	for _, m := range turns[0] {
		if m.Role == chat.RoleSystem {
			pinned += counter.CountMessage(m)
		}
	}
	newestUser := 0 // the tokens of the newest user message before the turn's unit
	for _, u := range turns {
		unit, user := tokencount.ReplyPriming, 0
		for _, m := range u {
			if m.Role != chat.RoleSystem {
				unit += counter.CountMessage(m)
			}
			if m.Role == chat.RoleUser {
				user = counter.CountMessage(m)
			}
		}
		// What no compaction can take out: the pinned messages, the newest unit, and the newest
		// user message, which stays in the active context.
		floor := pinned + unit
		if user == 0 {
			floor += newestUser
		} else {
			newestUser = user
		}
		if _, err := s.Append(ctx, thread, u, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		st.turns++
		st.added += unit - tokencount.ReplyPriming
		due, err := c.ShouldCompact(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		if due {
			rep, err := c.Compact(ctx, thread, compact.Options{})
			if rep.Status != compact.StatusNotNeeded {
				st.compactions++
				if floor > trigger {
					st.unavoidable++
				}
			}
			if err != nil && !errors.Is(err, compact.ErrOverLimit) {
				st.errs = append(st.errs, err.Error())
			}
			if rep.Status == memory.StatusApplied {
				st.maxAfter = max(st.maxAfter, rep.TokensAfter)
			}
			if strings.Contains(rep.Detail, "of the limit are pinned messages") {
				st.pinnedNotes++
			}
		}
		th, err := s.Thread(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		st.tokens += th.ActiveTokens
		if th.ActiveTokens > trigger && floor <= trigger {
			st.overTrigger++
		}
	}
	return st
}

// agentLife is a long agent's life: the system prompt of the first recorded conversation, then
// the turns of every recorded conversation (their own system prompts left out) in rounds, n
// turns in all.
func agentLife(t testing.TB, n int) [][]chat.Message {
	t.Helper()
	all := corpus.RecordedMessages(t)
	var pool [][]chat.Message
	for _, msgs := range all[1:] { // the airline conversations
		for _, u := range units(msgs) {
			var rest []chat.Message
			for _, m := range u {
				if m.Role != chat.RoleSystem {
					rest = append(rest, m)
				}
			}
			if len(rest) > 0 {
				pool = append(pool, rest)
			}
		}
	}
	out := [][]chat.Message{{all[1][0]}} // the airline policy: 1,252 tokens
	for len(out) < n {
		out = append(out, pool[(len(out)-1)%len(pool)])
	}
	out[1] = append(out[0], out[1]...)
	return out[1:]
}

// TestLifeMeasure replays every recorded conversation and a long agent's life at each limit:
// no compaction fails, and from 4,096 tokens on no turn ends over the trigger after its
// compaction. With -v it prints the compactions per 100 turns docs/compaction.md gives
// (go test -run TestLifeMeasure -v ./compact); TestLifeNoThrash is its short version. Under
// -short it replays the long agent's life and the first recorded conversation at 8,192 and
// 32,768 tokens only (TestLifeNoThrash replays the agent's at 2,048 and 4,096).
func TestLifeMeasure(t *testing.T) {
	t.Parallel()
	lives := map[string][][]chat.Message{"agent150": agentLife(t, 150)}
	limits := []int{2048, 4096, 8192, 32768}
	files := corpus.Conversations(t)
	if testing.Short() {
		limits, files = []int{8192, 32768}, files[:1]
	}
	for _, f := range files {
		lives[f[strings.LastIndex(f, "/")+1:]] = units(corpus.ReadMessagesFile(t, f))
	}
	// Each life at each limit is a subtest of its own, in parallel (a store of its own): run
	// one after the other they made this test the last of the package by half a minute.
	for _, limit := range limits {
		for name, turns := range lives {
			t.Run(fmt.Sprint(limit, "/", name), func(t *testing.T) {
				t.Parallel()
				s, _ := storetest.Open(t)
				c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit})
				st := replayLife(t, s, c, "t", turns)
				t.Logf("limit %5d  %-60s turns %3d  compactions %3d (%.0f per 100, %d unavoidable)  over trigger after %3d  context/turn %5d  added/turn %4d  max after %5d  notes %d  errors %d\n",
					limit, name, st.turns, st.compactions, st.perHundred(), st.unavoidable, st.overTrigger, st.tokens/st.turns, st.added/st.turns, st.maxAfter, st.pinnedNotes, len(st.errs))
				if len(st.errs) > 0 {
					t.Errorf("limit %d, %s: %d compactions failed: %q", limit, name, len(st.errs), st.errs[0])
				}
				// The target per 100 turns of the long agent's life (175 tokens a turn): about twice
				// what the room between trigger and target, 0.3 * L, allows with the summary within
				// its share (14 at 4,096, 7 at 8,192, 2 at 32,768), rounded up (32, 16, 4), the stored
				// ledger's growth being the rest. 4,096's bound is TestLifeNoThrash's.
				if want := map[int]float64{4096: 32, 8192: 16, 32768: 4}[limit]; name == "agent150" && want > 0 && st.perHundred() > want {
					t.Errorf("limit %d, %s: %.1f compactions per 100 turns, want at most %.0f", limit, name, st.perHundred(), want)
				}
				if limit >= 4096 && st.overTrigger > 0 {
					t.Errorf("limit %d, %s: %d turns ended over the trigger after their compaction", limit, name, st.overTrigger)
				}
			})
		}
	}
}

// TestLifeNoThrash: an airline agent's life of 150 turns (a 1,252-token system prompt) compacts
// at most 32 times per 100 turns at 4,096 tokens, never leaving the context over the trigger,
// and at 2,048 (where the system prompt takes 61% of the limit) goes deep rather than compact
// on every turn, saying so once.
//
// The target: a compaction brings the context to L * target_ratio, and the next is due at
// L * trigger_ratio; between them are (0.8 - 0.5) * 4096 = 1,229 tokens. The turns of this
// life add 175 tokens on average, so with the summary within the target a compaction is due
// every 7 turns (14 per 100). The facts a provider left out may take the summary further, up
// to L, and the stored ledger of facts and actions grows with each compaction: 28 per 100;
// once the thread compacts more often than every quarter of L appended, they take it only up
// to what leaves a quarter of L below the trigger: 18 per 100 (27 compactions). When the
// summary's prose could fill the room up to L, this life compacted 57 times in 149 turns at
// 4,096 (38 per 100) and 95 times at 2,048 (64 per 100). 32 is the bound.
// At 2,048 it still does (66 per 100): no rate is asserted there, only the note. At 2,048 the trigger
// leaves 386 tokens beside the system prompt: the newest turn and a summary of 64 tokens take
// most of them, so about every second turn compacts (17 of those turns are over the trigger
// with the system prompt and the newest turn alone).
func TestLifeNoThrash(t *testing.T) {
	t.Parallel()
	turns := agentLife(t, 150)
	for _, c := range []struct {
		limit      int
		perHundred float64
	}{{4096, 32}, {2048, 100}} {
		t.Run(fmt.Sprint(c.limit), func(t *testing.T) {
			t.Parallel() // a store of its own
			noThrash(t, turns, c.limit, c.perHundred)
		})
	}
}

// noThrash replays turns at limit and checks TestLifeNoThrash's bounds there.
func noThrash(t *testing.T, turns [][]chat.Message, limit int, perHundred float64) {
	t.Helper()
	s, _ := storetest.Open(t)
	comp := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit})
	st := replayLife(t, s, comp, "t", turns)
	if len(st.errs) > 0 {
		t.Fatalf("limit %d: %d compactions failed: %q", limit, len(st.errs), st.errs[0])
	}
	if st.perHundred() > perHundred {
		t.Errorf("limit %d: %d compactions in %d turns (%.1f per 100), want at most %.0f per 100", limit, st.compactions, st.turns, st.perHundred(), perHundred)
	}
	switch limit {
	case 4096:
		if st.overTrigger > 0 {
			t.Errorf("limit %d: %d turns ended over the trigger after their compaction", limit, st.overTrigger)
		}
	case 2048:
		if st.pinnedNotes != 1 {
			t.Errorf("limit %d: %d reports say the pinned messages leave less than the headroom, want 1", limit, st.pinnedNotes)
		}
	}
}
