package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/tokencount"
)

// A pinned message stays in the active context verbatim, whatever a compaction covers: the
// planner treats it as it treats the leading system messages (it is never summarized, masked
// or left out, and its tokens count in the budget). A pin holds the whole unit of its message
// (an assistant message with the tool results that answer its calls), so that a call never
// leaves its result. A pinned message a summary covers is shown after the leading system
// messages, before the summary; the others stay where they are. Pins are rows of their own:
// they survive compaction, revert and Copy. A pinned system/developer message is the thread's
// current instructions: it leads the active context, and the ones it superseded (the leading
// system/developer messages, those pinned before) are ordinary messages (see instructions).

// Errors of pins.
var (
	// ErrMessageNotFound: the thread has no message with that seq.
	ErrMessageNotFound = errors.New("message not found")
	// ErrNotPinned: an unpin named a message that no pin holds.
	ErrNotPinned = errors.New("message not pinned")
	// ErrPinRefused: the pinned messages would not fit the thread's limit, or the message
	// calls a tool whose result has not been appended yet.
	ErrPinRefused = errors.New("pin refused")
)

// Pinned is a pin: the message Seq, kept in the active context with its unit FromSeq..ToSeq.
type Pinned struct {
	Seq       int64     `json:"seq"`
	FromSeq   int64     `json:"from_seq"`
	ToSeq     int64     `json:"to_seq"`
	CreatedAt time.Time `json:"created_at"`
}

// Pin pins message seq of a thread (see Pinned), checked against the budget that limit gives
// for the thread. limit returns, for the thread whose stored settings are settings, the tokens
// that its pinned messages, its newest unit, the reply priming and the least room for a
// summary must fit in (budget), and that least room (room): it is the compaction policy's
// (compact.PinBudget; compact.Compactor.Pin pins with the compactor's settings), the store
// only adds up the tokens. Pinning a message again changes nothing. A pin is refused
// (ErrPinRefused, saying why) when the pinned messages, with the newest unit and room for a
// summary, would not fit the budget.
func (s *Store) Pin(ctx context.Context, thread string, seq int64, limit func(settings json.RawMessage) (budget, room int, err error)) (Pinned, error) {
	var p Pinned
	err := s.h.WithTx(ctx, func(q db.Querier) error {
		r, err := q.GetThread(ctx, thread)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return err
		}
		if seq < 1 || seq > r.LastSeq {
			return fmt.Errorf("%w: thread %q has messages 1..%d, not %d", ErrMessageNotFound, thread, r.LastSeq, seq)
		}
		budget, room, err := limit(settingsJSON(r.Settings))
		if err != nil {
			return err
		}
		hist, err := s.messagesAfter(ctx, q, thread, 0, true)
		if err != nil {
			return err
		}
		var open []string
		if err := json.Unmarshal([]byte(r.OpenCalls), &open); err != nil {
			return fmt.Errorf("thread %q: stored open calls: %w", thread, err)
		}
		from, to, last := unitOf(hist, seq)
		if to == hist[len(hist)-1].Seq && len(open) > 0 {
			return fmt.Errorf("%w: message %d of thread %q is in the unit of a tool call whose result has not been appended yet (call %s): pin it once the result is there",
				ErrPinRefused, seq, thread, open[0])
		}
		pins, err := q.ListPins(ctx, thread)
		if err != nil {
			return err
		}
		units := []db.Pin{{Seq: seq, FromSeq: from, ToSeq: to}}
		units = append(units, pins...)
		if err := fits(hist, units, last, budget, room); err != nil {
			return fmt.Errorf("%w: message %d of thread %q (with its unit, messages %d..%d): %v", ErrPinRefused, seq, thread, from, to, err)
		}
		now := s.now()
		if err := q.InsertPin(ctx, db.InsertPinParams{ThreadID: thread, Seq: seq, FromSeq: from, ToSeq: to, CreatedAt: now}); err != nil {
			return err
		}
		p = Pinned{Seq: seq, FromSeq: from, ToSeq: to, CreatedAt: time.UnixMilli(now).UTC()}
		for _, x := range pins {
			if x.Seq == seq { // pinned before: that pin stays as it was
				p = pinnedOf(x)
			}
		}
		return nil
	})
	if err != nil {
		return Pinned{}, fmt.Errorf("pin: %w", err)
	}
	return p, nil
}

// Unpin removes the pin that holds message seq of a thread (any message of its unit names
// it). A message no pin holds is ErrNotPinned.
func (s *Store) Unpin(ctx context.Context, thread string, seq int64) error {
	err := s.h.WithTx(ctx, func(q db.Querier) error {
		if _, err := q.GetThread(ctx, thread); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return err
		}
		n, err := q.DeletePins(ctx, db.DeletePinsParams{ThreadID: thread, Seq: seq})
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: message %d of thread %q", ErrNotPinned, seq, thread)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unpin: %w", err)
	}
	return nil
}

// Pins returns the pins of a thread, oldest unit first.
func (s *Store) Pins(ctx context.Context, thread string) ([]Pinned, error) {
	return readTx(ctx, s, func(q db.Querier) ([]Pinned, error) {
		if _, err := q.GetThread(ctx, thread); errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return nil, err
		}
		rows, err := q.ListPins(ctx, thread)
		if err != nil {
			return nil, err
		}
		out := make([]Pinned, len(rows))
		for i, r := range rows {
			out[i] = pinnedOf(r)
		}
		return out, nil
	})
}

func pinnedOf(r db.Pin) Pinned {
	return Pinned{Seq: r.Seq, FromSeq: r.FromSeq, ToSeq: r.ToSeq, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
}

// unitOf returns the unit of message seq in a thread's whole history (seqs 1..n): the seqs
// between the cuts around it where a compaction may cut (Cuts), and the index in hist
// where the newest unit starts. A leading system message is a unit of its own.
func unitOf(hist []Entry, seq int64) (from, to int64, last int) {
	lead := PinnedLen(hist)
	i := int(seq - 1)
	cuts := Cuts(hist, lead)
	last = lead
	if len(cuts) > 0 {
		last = cuts[len(cuts)-1]
	}
	if i < lead {
		return seq, seq, last
	}
	start, end := lead, len(hist)
	for _, c := range cuts {
		if c <= i {
			start = c
		} else {
			end = c
			break
		}
	}
	return hist[start].Seq, hist[end-1].Seq, last
}

// fits returns why the pinned messages (the leading system messages and the units of pins)
// would not fit budget with the newest unit (hist[last:]) and room for a summary; nil when
// they fit. Instructions a later pin superseded (see instructions) are not counted: they are
// summarized like the middle. The room is what a deep plan gives its summary at least
// (DeepSummaryTokens, or summary_max_tokens when that is less): pins that take the context
// there leave a compaction only a deep plan, and one with less room is ineffective, the thread
// over its limit for good.
func fits(hist []Entry, pins []db.Pin, last, budget, room int) error {
	seqs := make([]int64, len(pins))
	for i, p := range pins {
		seqs[i] = p.Seq
	}
	live, superseded := instructions(seqs, func(seq int64) bool { return seq <= int64(len(hist)) && isInstruction(hist[seq-1].Message) })
	pinned, newest := 0, 0
	lead := PinnedLen(hist)
	for i, e := range hist {
		in := i < lead && (live == nil || live[e.Seq]) || slices.ContainsFunc(pins, func(p db.Pin) bool {
			return !superseded[p.Seq] && e.Seq >= p.FromSeq && e.Seq <= p.ToSeq
		})
		switch {
		case in:
			pinned += e.Tokens
		case i >= last:
			newest += e.Tokens
		}
	}
	need := pinned + newest + tokencount.ReplyPriming + room
	if need <= budget {
		return nil
	}
	return fmt.Errorf("the pinned messages would take %d tokens (the leading system messages included); with the newest messages (%d tokens) and room for a summary (%d) that is %d, over the limit %d (token_limit - reserve_tokens): unpin a message or raise the limit",
		pinned, newest, room, need, budget)
}

// instructions sorts the pinned messages that are system/developer messages (isInstruction
// says, of a pin's seq): the newest block of them (consecutive seqs) is the thread's current
// instructions (live); the earlier ones, and the thread's leading system/developer messages,
// are instructions it superseded. A pinned system/developer message is how an agent that
// changes its system prompt says so (memctl serve pins each changed prompt): what the agent
// sent last is what its model must get, and what it sent before is history. Both maps are nil
// when no pinned message is a system/developer message.
func instructions(seqs []int64, isInstruction func(seq int64) bool) (live, superseded map[int64]bool) {
	var instr []int64
	for _, seq := range seqs {
		if isInstruction(seq) {
			instr = append(instr, seq)
		}
	}
	if len(instr) == 0 {
		return nil, nil
	}
	slices.Sort(instr)
	instr = slices.Compact(instr)
	live, superseded = map[int64]bool{}, map[int64]bool{}
	k := len(instr) - 1
	live[instr[k]] = true
	for k > 0 && instr[k-1] == instr[k]-1 {
		k--
		live[instr[k]] = true
	}
	for _, seq := range instr[:k] {
		superseded[seq] = true
	}
	return live, superseded
}

// withPins puts the pinned messages of a thread into entries, an active context read light
// or whole: each pin's unit read again (so that a view never shows it masked or cut) in its
// place when the context has it, else after the leading system messages. Read light, for the
// compactor, every pinned message is moved there (hoistPinned), so that a plan never
// summarizes it.
//
// The newest pinned system/developer messages, the thread's current instructions (see
// instructions), come first, with their unit; the instructions they superseded (the leading
// system/developer messages, earlier pinned ones) are no longer pinned: marked Superseded
// where the context shows them. One that a summary covers while it was pinned, which that
// summary therefore left out (planned is the thread's last seq when it was planned, 0: no
// summary), is shown before the summary, for the next compaction to summarize.
func (s *Store) withPins(ctx context.Context, q db.Querier, thread string, entries []Entry, planned int64, light bool) ([]Entry, error) {
	pins, err := q.ListPins(ctx, thread)
	if err != nil || len(pins) == 0 {
		return entries, err
	}
	read := map[int64]Entry{} // the messages of the pins' units, read again
	for _, r := range mergePins(pins) {
		fresh, err := s.messagesBetween(ctx, q, thread, r[0], r[1], light)
		if err != nil {
			return nil, err
		}
		for _, e := range fresh {
			read[e.Seq] = e
		}
	}
	seqs := make([]int64, len(pins))
	for i, p := range pins {
		seqs[i] = p.Seq
	}
	live, superseded := instructions(seqs, func(seq int64) bool { e, ok := read[seq]; return ok && isInstruction(e.Message) })
	if live != nil {
		entries = supersede(entries, pins, live, superseded, planned, read)
		pins = slices.DeleteFunc(slices.Clone(pins), func(p db.Pin) bool { return superseded[p.Seq] })
	}
	for _, r := range mergePins(pins) {
		in := func(e Entry) bool { return e.CompactionID == 0 && e.Seq >= r[0] && e.Seq <= r[1] }
		fresh := make([]Entry, 0, r[1]-r[0]+1)
		instr := false
		for seq := r[0]; seq <= r[1]; seq++ {
			e := read[seq]
			e.Pinned, e.Superseded = true, false
			fresh = append(fresh, e)
			instr = instr || live[seq]
		}
		at := slices.IndexFunc(entries, in)
		entries = slices.DeleteFunc(entries, in)
		if at < 0 || at > len(entries) {
			at = PinnedLen(entries)
		}
		if instr {
			at = 0 // the current instructions lead
		}
		entries = slices.Insert(entries, at, fresh...)
	}
	if light {
		entries = hoistPinned(entries)
	}
	return entries, nil
}

// supersede marks in entries the instructions that live superseded: the leading
// system/developer messages and the pinned ones of superseded. A superseded pin's unit that
// the context does not show, covered by a summary planned (at last seq planned) before the
// instructions that superseded it were appended, is shown before the summary: that summary
// left it out, as it was pinned then.
func supersede(entries []Entry, pins []db.Pin, live, superseded map[int64]bool, planned int64, read map[int64]Entry) []Entry {
	entries = slices.Clone(entries)
	for i := 0; i < len(entries) && entries[i].CompactionID == 0 && isInstruction(entries[i].Message); i++ {
		if !live[entries[i].Seq] {
			entries[i].Superseded = true
		}
	}
	var instr []int64 // the pinned instructions' seqs, ascending
	for seq := range live {
		instr = append(instr, seq)
	}
	for seq := range superseded {
		instr = append(instr, seq)
	}
	slices.Sort(instr)
	// next returns the first seq of the instructions that superseded those of seq.
	next := func(seq int64) int64 {
		i, _ := slices.BinarySearch(instr, seq)
		for i+1 < len(instr) && instr[i+1] == instr[i]+1 {
			i++
		}
		if i+1 < len(instr) {
			return instr[i+1]
		}
		return instr[len(instr)-1]
	}
	sum := slices.IndexFunc(entries, func(e Entry) bool { return e.CompactionID != 0 })
	var held []Entry
	for _, p := range pins {
		if !superseded[p.Seq] {
			continue
		}
		at := slices.IndexFunc(entries, func(e Entry) bool { return e.CompactionID == 0 && e.Seq == p.Seq })
		if at >= 0 {
			entries[at].Superseded = true
			continue
		}
		// The summary that covers it, and when it was planned (a view may keep several).
		by := slices.IndexFunc(entries, func(e Entry) bool { return e.CompactionID != 0 && p.Seq >= e.CoversFrom && p.Seq <= e.CoversTo })
		when := planned
		if by >= 0 && entries[by].planned != 0 {
			when = entries[by].planned
		}
		if sum < 0 || by < 0 || when >= next(p.Seq) {
			continue // summarized, or left out by the view
		}
		for seq := p.FromSeq; seq <= p.ToSeq; seq++ {
			if slices.ContainsFunc(entries, func(e Entry) bool { return e.CompactionID == 0 && e.Seq == seq }) ||
				slices.ContainsFunc(held, func(e Entry) bool { return e.Seq == seq }) {
				continue
			}
			e := read[seq]
			e.Pinned, e.Superseded = false, isInstruction(e.Message)
			held = append(held, e)
		}
	}
	if len(held) > 0 {
		slices.SortFunc(held, func(a, b Entry) int { return int(a.Seq - b.Seq) })
		entries = slices.Insert(entries, sum, held...)
	}
	return entries
}

// mergePins returns the seq ranges the pins hold, ascending, overlapping ones merged.
func mergePins(pins []db.Pin) []SeqRange {
	rs := make([]SeqRange, len(pins))
	for i, p := range pins {
		rs[i] = SeqRange{p.FromSeq, p.ToSeq}
	}
	slices.SortFunc(rs, func(a, b SeqRange) int { return int(a[0] - b[0]) })
	var out []SeqRange
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// hoistPinned moves every pinned entry to the leading pinned block (after the system
// messages), keeping the order of the rest: the one place where the planner learns of pins.
func hoistPinned(entries []Entry) []Entry {
	lead := PinnedLen(entries)
	out := slices.Clone(entries[:lead])
	for _, e := range entries[lead:] {
		if e.Pinned {
			out = append(out, e)
		}
	}
	for _, e := range entries[lead:] {
		if !e.Pinned {
			out = append(out, e)
		}
	}
	return out
}
