package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/memory"
)

// lifeTargets are the most compactions per 100 turns docs/compaction.md states per limit
// (none at 2,048, where a deep compaction is said once instead).
var lifeTargets = map[int]float64{4096: 32, 8192: 16, 32768: 4}

// life is a thread the life step replays.
type life struct {
	name string
	msgs []chat.Message
}

// lifeRows: the life of compactions (issue 20). The recorded conversations of testdata and
// generated threads of 40 and 120 tasks, replayed message by message at 2,048 to 32,768 tokens,
// compacting whenever ShouldCompact says so, through the offline rung and two fake providers
// (summaries holding no fact; summaries leaving out a random third of the facts); a row per
// figure and limit, summed over the lives. With -quick: the 40-task thread and the task 2
// airline thread at 4,096.
func (b *bench) lifeRows([]conversation) error {
	lives := []life{{"generated40", lifesim.Generated(40)}}
	limits := lifesim.Limits
	files, err := filepath.Glob("testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no testdata conversations (run from the repository root): %v", err)
	}
	if b.quick {
		files, limits = []string{"testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"}, []int{4096}
	} else {
		lives = append(lives, life{"generated120", lifesim.Generated(120)})
	}
	for _, f := range files {
		msgs, err := readMessages(f)
		if err != nil {
			return err
		}
		lives = append(lives, life{strings.TrimSuffix(filepath.Base(f), ".jsonl"), msgs})
	}
	names := make([]string, len(lives))
	for i, l := range lives {
		names[i] = l.name
	}
	n := 0
	for _, limit := range limits {
		start := time.Now()
		var sum lifesim.Stats
		broken := 0 // lives stopped by a loss no report names
		for _, l := range lives {
			for _, kind := range lifesim.Kinds {
				n++
				st, err := b.oneLife(n, l.msgs, limit, kind)
				if lost, ok := errors.AsType[*lifesim.LostError](err); ok {
					fmt.Fprintf(os.Stderr, "  life %s at %d through %s: %v\n", l.name, limit, kind, lost)
					st.Lost += len(lost.Lost)
					broken++
				} else if err != nil {
					return fmt.Errorf("%s at %d through %s: %w", l.name, limit, kind, err)
				}
				sum.Add(st)
			}
		}
		b.addLife(limit, len(lives), sum, broken, time.Since(start))
	}
	b.add("life: threads", strings.Join(names, ", ")+"; summarizers "+strings.Join(lifesim.Kinds, ", "), "", nil)
	return b.ledgerRow(n + 1)
}

// ledgerRow: the ledgers a long life stores (issue 36). A 300-turn life at 1,500 tokens (the
// generated thread of 50 tasks, through the offline rung): the bytes of its compaction rows'
// ledgers against those of its messages (as each is given, JSON), under twice them.
func (b *bench) ledgerRow(n int) error {
	ctx := context.Background()
	s, done, err := b.lifeStore(n)
	if err != nil {
		return err
	}
	defer done()
	msgs := lifesim.Generated(50)
	if _, err := lifesim.Simulate(ctx, s, msgs, 1500, "offline", nil); err != nil {
		return fmt.Errorf("ledger life: %w", err)
	}
	rows, err := s.DB().Q().ListAllCompactions(ctx)
	if err != nil {
		return err
	}
	ledgers, messages := 0, 0
	for _, r := range rows {
		ledgers += len(r.Ledger)
	}
	for _, m := range msgs {
		data, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		messages += len(data)
	}
	b.add("ledger: 300-turn life at 1,500 tokens", fmt.Sprintf("%s bytes of ledgers in %d compactions for %s bytes of messages (%.2f x)",
		thousands(ledgers), len(rows), thousands(messages), float64(ledgers)/float64(max(messages, 1))), "under 2 x", ptr(ledgers < 2*messages))
	return nil
}

// lifeStore opens the store of life n, new, and returns it with what closes and removes it.
func (b *bench) lifeStore(n int) (*memory.Store, func(), error) {
	path := filepath.Join(b.dir, fmt.Sprintf("life-%d.db", n))
	remove := func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}
	s, err := openStore(path)
	if err != nil {
		remove()
		return nil, nil, err
	}
	return s, func() { s.Close(); remove() }, nil
}

// oneLife simulates one life in a store of its own, removed after.
func (b *bench) oneLife(n int, msgs []chat.Message, limit int, kind string) (lifesim.Stats, error) {
	ctx := context.Background()
	s, done, err := b.lifeStore(n)
	if err != nil {
		return lifesim.Stats{}, err
	}
	defer done()
	return lifesim.Simulate(ctx, s, msgs, limit, kind, nil)
}

// addLife adds the rows of one limit.
func (b *bench) addLife(limit, lives int, st lifesim.Stats, broken int, d time.Duration) {
	at := fmt.Sprintf("life at %s", thousands(limit))
	per100 := 100 * float64(st.Compactions) / float64(max(st.Turns, 1))
	target, ok := "none (deep, said once)", (*bool)(nil)
	if t, has := lifeTargets[limit]; has {
		target, ok = fmt.Sprintf("at most %g", t), ptr(per100 <= t)
	}
	b.add(at+": compactions per 100 turns", fmt.Sprintf("%.1f (%d in %d turns of %d lives, %d failed, nothing changed; %s)",
		per100, st.Compactions, st.Turns, lives*len(lifesim.Kinds), st.Failed, d.Round(time.Second)), target, ok)
	value := fmt.Sprintf("%d / %d / %d of %d (%d facts, %d actions)", st.Kept, st.Named, st.Lost, st.Facts+st.Actions, st.Facts, st.Actions)
	if broken > 0 {
		value += fmt.Sprintf(", %d lives stopped at a loss", broken)
	}
	b.add(at+": facts and actions kept / named dropped / lost unnamed", value, "0 lost", ptr(st.Lost == 0 && broken == 0))
	b.add(at+": writes kept / named (on one line with their key arguments)", fmt.Sprintf("%d / %d of %d", st.WritesKept, st.WritesNamed, st.Writes), "", nil)
	b.add(at+": active tokens per turn", fmt.Sprint(st.TokensSum/max(st.Turns, 1)), "", nil)
	b.add(at+": compactions that left the newest user message out", fmt.Sprintf("%d of %d", st.NewestUserMissing, st.Compactions), "0", ptr(st.NewestUserMissing == 0))
	b.add(at+": compactions whose summary lacks the prompt's sections", fmt.Sprintf("%d of %d", st.SectionsBroken, st.Compactions), "0", ptr(st.SectionsBroken == 0))
}

// thousands writes n with commas: 32,768.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// readMessages reads a JSON-lines conversation file.
func readMessages(path string) ([]chat.Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var msgs []chat.Message
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m chat.Message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
