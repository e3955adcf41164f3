package compact

import (
	"context"
	"slices"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// A thread's ledger lives as long as the thread. Each applied summary stores, in its compaction
// row, the ledger of what it covers: the facts and actions of the original messages, each with
// the seq of the message it came from, the tool call it belongs to, and whether a report named
// it dropped. A later compaction that folds the summary in starts from that ledger and adds the
// facts of the messages it newly summarizes, and a view that leaves the summary out (window,
// on_failure fit) names the facts of that ledger it no longer holds; neither reads facts back
// from the summary's text.
// So the facts check (factsfit.go) holds against the original messages after any number of
// compactions, and a revert restores the ledger with the summary it brings back.

// entryFacts returns the ledger of es as the summarizer reads them (redacted): each fact with
// the seq of the message it was first seen in and, when it was seen in a tool call's arguments
// or in its result, that call as its entity. What the product wrote itself is never a fact
// (shownText, the rule the facts checks read by too): a masked result gives the facts of its
// digest only, a cut one is read without its marker (with, from the original, the facts they
// show: see shownFacts). A summary entry gives the facts of its body (its header left out) when
// withSummaries is set (a summary applied before ledgers were stored, see middleLedger), and
// none otherwise (its facts come from its stored ledger, see middleLedger).
//
// tms, when not nil, are es as the summarizer reads them already (parallel to es): they are not
// redacted again.
func entryFacts(es []memory.Entry, tms []transcript.Message, redact func(string) string, withSummaries bool) []facts.Fact {
	n := len(es) // a message each, and one more for each tool call
	for _, e := range es {
		n += len(e.Message.ToolCalls)
	}
	// Each message the ledger reads is made when it reads it (facts.ExtractFunc), from its
	// place: a long middle is not copied into a list of messages of its own first.
	type place struct{ entry, call int32 } // call -1: the message itself, else its call
	var (
		places = make([]place, 0, n)
		seqs   = make([]int64, 0, n)
		ents   = make([]string, 0, n)
		calls  = map[string]string{} // call id -> the call's text
		shown  []facts.Fact          // of the masked and cut results' originals (see shownFacts)
	)
	add := func(p place, seq int64, entity string) {
		places, seqs, ents = append(places, p), append(seqs, seq), append(ents, entity)
	}
	if tms == nil {
		tms = transcriptMessages(es, redact)
	}
	for i, e := range es {
		if e.CompactionID != 0 && !withSummaries {
			continue
		}
		tm := &tms[i]
		if tm.Role == transcript.RoleSummary {
			add(place{int32(i), -1}, e.CoversFrom, "")
			continue
		}
		entity := ""
		if tm.ToolCallID != "" {
			entity = calls[tm.ToolCallID]
		}
		add(place{int32(i), -1}, e.Seq, entity)
		if m := e.Mark(); m != nil && m.Orig != "" {
			shown = append(shown, shownFacts(e, shownText(e, tm.Text, redact), entity, redact)...)
		}
		for j, tc := range tm.ToolCalls { // each call apart: its arguments belong to it
			text := facts.CallText(facts.ToolCall{Name: tc.Name, Arguments: tc.Arguments, ID: tc.ID})
			calls[tc.ID] = text
			add(place{int32(i), int32(j)}, e.Seq, text)
		}
	}
	ledger := facts.ExtractFunc(len(places), func(k int) facts.Message {
		p := places[k]
		tm := tms[p.entry]
		if p.call >= 0 {
			tc := tm.ToolCalls[p.call]
			return facts.Message{Role: tm.Role, ToolCalls: []facts.ToolCall{{Name: tc.Name, Arguments: tc.Arguments, ID: tc.ID}}}
		}
		tm.Text = shownText(es[p.entry], tm.Text, redact)
		fm := facts.FromTranscript(tm)
		if tm.Role != transcript.RoleSummary {
			fm.ToolCalls = nil
		}
		return fm
	})
	for i := range ledger {
		k := ledger[i].Seq
		ledger[i].Seq, ledger[i].Entity = int(seqs[k]), ents[k]
	}
	return facts.Merge(ledger, shown)
}

// middleLedger returns the ledger of a pass's middle (or of what a view change takes out of the
// active context, see viewFacts): the stored ledgers of the summaries it folds in, merged with
// the facts of the messages newly summarized (tms: the middle as the summarizer reads it,
// redacted; nil: made from middle). base is the stored ledger, of those, that the row of a
// summary of this middle is best written as the difference from (the largest; nil: none).
func (c *Compactor) middleLedger(ctx context.Context, middle []memory.Entry, tms []transcript.Message) (ledger []facts.Fact, base *storedRow, err error) {
	var stored []facts.Fact
	for _, e := range middle {
		if e.CompactionID == 0 {
			continue
		}
		r, err := c.readStored(ctx, e.CompactionID)
		if err != nil {
			return nil, nil, err
		}
		if r == nil { // applied before ledgers were stored: the facts of its text stand for it
			stored = facts.Merge(stored, entryFacts([]memory.Entry{e}, nil, c.redact, true))
			continue
		}
		if base == nil || len(r.facts) > len(base.facts) {
			base = r
		}
		stored = facts.Merge(stored, r.facts)
	}
	return facts.Merge(stored, entryFacts(middle, tms, c.redact, false)), base, nil
}

// needed splits a ledger into the facts the context still needs and those a report already
// named dropped.
func needed(ledger []facts.Fact) (need, named []facts.Fact) {
	if !anyDropped(ledger) {
		return ledger, nil // every fact is needed: no copy
	}
	if len(ledger) > 0 {
		need = make([]facts.Fact, 0, len(ledger))
	}
	for _, f := range ledger {
		if f.Dropped {
			named = append(named, f)
		} else {
			need = append(need, f)
		}
	}
	return need, named
}

// storedLedger is the ledger a summary's row stores (see encodeStored): every fact of what it
// covers (ledger, what the check ran against; earlier, what earlier reports named dropped),
// with the facts this compaction named dropped (dropped: those that did not fit, and those a
// mask left out) marked so.
func storedLedger(ledger, earlier, dropped []facts.Fact) []facts.Fact {
	type key struct {
		kind facts.Kind
		text string
	}
	gone := make([]facts.Fact, len(dropped))
	named := make(map[key]bool, len(dropped))
	for i, f := range dropped {
		f.Dropped = true
		gone[i] = f
		named[key{f.Kind, f.Text}] = true
	}
	out := ledger // when it names nothing dropped and holds nothing marked so, as it is
	if len(dropped) > 0 || anyDropped(ledger) {
		out = make([]facts.Fact, len(ledger))
		for i, f := range ledger {
			f.Dropped = named[key{f.Kind, f.Text}]
			out[i] = f
		}
	}
	if len(out) == 0 { // Merge gives the other side as it is when one is empty
		return facts.Merge(facts.Merge(out, gone), earlier)
	}
	// One merge of both: the same ledger as merging gone, then earlier (Merge keeps the first
	// sighting and sorts stably), with one index of the ledger instead of two.
	return facts.Merge(out, append(gone, earlier...))
}

// anyDropped reports whether a fact of fs is marked dropped.
func anyDropped(fs []facts.Fact) bool {
	return slices.ContainsFunc(fs, func(f facts.Fact) bool { return f.Dropped })
}
