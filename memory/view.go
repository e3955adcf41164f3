package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
)

// A compaction's view is how the active context differs from the history. A compaction that
// only summarized has none (its view is the summary between the messages before and after the
// range it covers). One that masked, left out or cut messages records, in its row's view column,
// a view: the seqs it changed and how, never a copy of a message. The active context is derived
// from it and the messages: a masked tool result is rendered as a placeholder from the stored
// digest, a cut one from the head and tail of the stored original. Messages after the row's
// view_seq are in the view as they are. Each row's view is whole (an earlier compaction's masks
// are carried over), so reverting a compaction restores the view of the one before it.

// view is the JSON of a compaction row's view column.
type view struct {
	// Summary is the compaction whose summary is in the view (0: none); it covers the row's
	// from_seq..to_seq.
	Summary int64 `json:"summary,omitempty"`
	// Others are the other summaries in the view, each a block of its own covering its range
	// (a strategy that keeps earlier summaries as they are, compact's queue), oldest first.
	Others []SummaryRef `json:"others,omitempty"`
	Masked []Masked     `json:"masked,omitempty"`
	// Omitted are the seq ranges [from, to] left out of the view, summary range excluded.
	Omitted []SeqRange `json:"omitted,omitempty"`
	Cut     []Cut      `json:"cut,omitempty"`
	// Held are the seqs within the summary's range shown as they are, before the summary: the
	// newest user message when the summary covers it (see compact.Plan.Hold).
	Held []int64 `json:"held,omitempty"`
	// Cleared are the assistant messages shown without their tool calls' arguments or their
	// reasoning (see Cleared).
	Cleared []Cleared `json:"cleared,omitempty"`
}

// SeqRange is a range of seqs, both ends included.
type SeqRange [2]int64

// SummaryRef is a summary in a view beside the one of the row's range: the compaction that
// wrote it and the seqs it covers. Its JSON is that of the stored view column.
type SummaryRef struct {
	ID   int64 `json:"id"`
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Masked is a tool result a view replaced by a placeholder. Its JSON is that of the stored view
// column.
type Masked struct {
	Seq        int64  `json:"seq"`
	Tool       string `json:"tool"`
	Digest     string `json:"digest"`
	Tokens     int    `json:"tokens"`      // the placeholder's
	OrigTokens int    `json:"orig_tokens"` // the original's
	OrigBytes  int    `json:"orig_bytes"`
}

// Cut is a tool result a view cut short: its first Head and last Tail bytes kept around a
// marker. Its JSON is that of the stored view column.
type Cut struct {
	Seq        int64 `json:"seq"`
	Head       int   `json:"head"`
	Tail       int   `json:"tail"`
	Tokens     int   `json:"tokens"`
	OrigTokens int   `json:"orig_tokens"`
}

// Mark is what a view did to an entry: masked (Masked set) or cut (Cut set).
type Mark struct {
	Masked  *Masked
	Cut     *Cut
	Cleared *Cleared
	// Orig is the result's text as appended: the ledger takes from it the facts the shown text
	// keeps, which the shown text alone may not show as facts.
	Orig string
}

// Mark returns what a view did to the entry: nil when it is shown as appended. Entries that
// share a mark return the same pointer.
func (e Entry) Mark() *Mark { return e.mark }

// Marked returns e as a view marked m shows it, counted as the mark says, its Mark m: a
// masked tool result as its placeholder (m.Masked.Tokens), a cut one as the head and tail of
// m.Orig around a marker (m.Cut.Tokens), a cleared assistant message without its tool
// calls' arguments or its reasoning (m.Cleared.Tokens). A view that stores the mark shows the
// entry so when it is read again. e as it is when m marks nothing.
func (e Entry) Marked(m *Mark) Entry {
	switch {
	case m.Masked != nil:
		return e.withText(m.Masked.placeholder(e.Message.ToolCallID), m.Masked.Tokens, m)
	case m.Cut != nil:
		return e.withText(m.Cut.text(m.Orig), m.Cut.Tokens, m)
	case m.Cleared != nil:
		e.Message = m.Cleared.apply(e.Message)
		e.Tokens, e.mark = m.Cleared.Tokens, m
	}
	return e
}

// placeholder is the text of a masked tool result, the result of call callID.
func (m Masked) placeholder(callID string) string {
	return fmt.Sprintf("[tool result masked to save context: call %s (%s), %d tokens, %d bytes, kept in history; digest: %s]",
		callID, m.Tool, m.OrigTokens, m.OrigBytes, m.Digest)
}

// text is the text of a cut tool result whose text as appended is orig.
func (c Cut) text(orig string) string {
	if c.Head+c.Tail > len(orig) {
		return orig
	}
	return orig[:c.Head] + fmt.Sprintf(cutMarker, len(orig)-c.Head-c.Tail) + orig[len(orig)-c.Tail:]
}

// cutMarker marks where a cut tool result lost its middle.
const cutMarker = "\n[... %d bytes cut to fit the context window; the whole result is in history ...]\n"

// cutMarkerRE finds cutMarker in a text, made from it: what it says is the product's, never a
// fact.
var cutMarkerRE = regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(cutMarker), "%d", `\d+`))

// StripCutMarkers returns s with the marker of each cut (see Entry.Marked) turned back into a
// newline: what the marker says is the product's, never a fact.
func StripCutMarkers(s string) string { return cutMarkerRE.ReplaceAllString(s, "\n") }

// withText returns e showing text instead of its own content, counted tokens and marked m: the
// message keeps its role, name and tool_call_id, with a plain string content.
func (e Entry) withText(text string, tokens int, m *Mark) Entry {
	msg := chat.TextMessage(e.Message.Role, text)
	msg.Name, msg.ToolCallID = e.Message.Name, e.Message.ToolCallID
	e.Message, e.text, e.light, e.Tokens, e.mark = msg, text, true, tokens, m
	return e
}

// SummaryEntry returns the entry of the summary text of compaction compactionID, a message of
// role counted tokens, which covers the messages from..to.
func SummaryEntry(compactionID int64, role, text string, tokens int, from, to int64) Entry {
	return Entry{Tokens: tokens, Message: chat.TextMessage(role, text), CompactionID: compactionID,
		CoversFrom: from, CoversTo: to, text: text, light: true}
}

// applyMarks returns e as the view shows it.
func (v view) applyMarks(es []Entry) {
	for i, e := range es {
		if k := slices.IndexFunc(v.Masked, func(m Masked) bool { return m.Seq == e.Seq }); k >= 0 {
			m := v.Masked[k]
			es[i] = e.Marked(&Mark{Masked: &m, Orig: e.Text()})
		} else if k := slices.IndexFunc(v.Cut, func(c Cut) bool { return c.Seq == e.Seq }); k >= 0 {
			c := v.Cut[k]
			es[i] = e.Marked(&Mark{Cut: &c, Orig: e.Text()})
		} else if k := slices.IndexFunc(v.Cleared, func(c Cleared) bool { return c.Seq == e.Seq }); k >= 0 && e.CompactionID == 0 {
			c := v.Cleared[k]
			es[i] = e.Marked(&Mark{Cleared: &c})
		}
	}
}

// readView reads the active context of a thread whose current compaction cur has a view.
func (s *Store) readView(ctx context.Context, q db.Querier, a Active, cur db.Compaction, light bool) (Active, error) {
	var v view
	if err := json.Unmarshal([]byte(cur.View), &v); err != nil {
		return Active{}, fmt.Errorf("thread %q: compaction %d: stored view: %w", a.Thread.ID, cur.ID, err)
	}
	out := append([]SeqRange(nil), v.Omitted...)
	sums := v.summaries(cur)
	for _, r := range sums {
		out = append(out, SeqRange{r.From, r.To})
	}
	var err error
	for _, r := range keptRanges(out, cur.ViewSeq, int64(a.Thread.Messages)) {
		es, err := s.readRange(ctx, q, a.Thread, r[0], r[1], light)
		if err != nil {
			return Active{}, err
		}
		a.Entries = append(a.Entries, es...)
	}
	var held []Entry
	for _, seq := range v.Held {
		es, err := s.messagesBetween(ctx, q, a.Thread.ID, seq, seq, light)
		if err != nil {
			return Active{}, err
		}
		held = append(held, es...)
	}
	v.applyMarks(a.Entries)
	v.applyMarks(held)
	for _, r := range sums {
		if a, err = s.withSummary(ctx, q, a, cur, r); err != nil {
			return Active{}, err
		}
	}
	if len(sums) > 0 {
		// The held messages are shown before the newest summary, after the older ones.
		newest := sums[len(sums)-1].ID
		at := slices.IndexFunc(a.Entries, func(e Entry) bool { return e.CompactionID == newest })
		a.Entries = slices.Insert(a.Entries, at, held...)
	}
	a.Current = cur.ID
	return a, nil
}

// summaries returns the summaries of the view of row cur, each with its range, oldest first.
func (v view) summaries(cur db.Compaction) []SummaryRef {
	out := slices.Clone(v.Others)
	if v.Summary != 0 {
		out = append(out, SummaryRef{ID: v.Summary, From: cur.FromSeq.Int64, To: cur.ToSeq.Int64})
	}
	slices.SortFunc(out, func(a, b SummaryRef) int { return int(a.From - b.From) })
	return out
}

// withSummary inserts the summary r of a view of compaction cur into a, where its range puts
// it (the summaries are inserted oldest first): a's Summary, FromSeq and ToSeq become its.
func (s *Store) withSummary(ctx context.Context, q db.Querier, a Active, cur db.Compaction, r SummaryRef) (Active, error) {
	sum := cur
	if r.ID != cur.ID {
		var err error
		if sum, err = q.GetCompaction(ctx, r.ID); err != nil {
			return Active{}, fmt.Errorf("thread %q: compaction %d: its view's summary %d: %w", a.Thread.ID, cur.ID, r.ID, err)
		}
	}
	e := SummaryEntry(r.ID, sum.SummaryRole.String, sum.Summary.String, int(sum.SummaryTokens), r.From, r.To)
	e.planned = sum.LastSeq
	at := slices.IndexFunc(a.Entries, func(x Entry) bool { return x.Seq > r.From })
	if at < 0 {
		at = len(a.Entries)
	}
	a.Entries = slices.Insert(a.Entries, at, e)
	a.Summary, a.FromSeq, a.ToSeq, a.summaryPlanned = r.ID, r.From, r.To, sum.LastSeq
	return a, nil
}

// keptRanges returns the seq ranges of 1..last outside the ranges out (which lie within
// 1..viewSeq), ascending.
func keptRanges(out []SeqRange, viewSeq, last int64) []SeqRange {
	out = slices.Clone(out)
	slices.SortFunc(out, func(a, b SeqRange) int { return int(a[0] - b[0]) })
	var kept []SeqRange
	next := int64(1)
	for _, r := range out {
		if r[0] > next {
			kept = append(kept, SeqRange{next, r[0] - 1})
		}
		next = max(next, r[1]+1)
	}
	if next <= last {
		kept = append(kept, SeqRange{next, last})
	}
	return kept
}

// viewOf returns the view of entries, an active context over the messages up to viewSeq whose
// summary (if any) compaction id may have written, as stored: "" when the view is the summary
// of id alone (or no change at all), with from and to the range of its summary.
func viewOf(entries []Entry, viewSeq, id int64) (text string, from, to int64) {
	v, from, to := viewFor(entries, viewSeq, id)
	if v.Summary == id && len(v.Others) == 0 && len(v.Masked) == 0 && len(v.Cut) == 0 && len(v.Omitted) == 0 && len(v.Held) == 0 && len(v.Cleared) == 0 {
		return "", from, to
	}
	b, _ := json.Marshal(v) // plain values always marshal
	return string(b), from, to
}

// ViewChangesOf returns what the view of entries, an active context over the messages up to
// viewSeq, leaves out of it or shows shortened, beside its summary (see ViewChanges).
func ViewChangesOf(entries []Entry, viewSeq int64) ViewChanges {
	v, _, _ := viewFor(entries, viewSeq, 0)
	return v.changes()
}

// viewFor returns the view of entries, an active context over the messages up to viewSeq, with
// from and to the range of its summary: the one compaction id wrote when entries hold it, else
// the newest; the other summaries are the view's Others.
func viewFor(entries []Entry, viewSeq, id int64) (v view, from, to int64) {
	present := map[int64]bool{}
	var sums []SummaryRef
	for _, e := range entries {
		switch {
		case e.CompactionID != 0:
			sums = append(sums, SummaryRef{ID: e.CompactionID, From: e.CoversFrom, To: e.CoversTo})
		case e.mark != nil && e.mark.Masked != nil:
			v.Masked = append(v.Masked, *e.mark.Masked)
		case e.mark != nil && e.mark.Cut != nil:
			v.Cut = append(v.Cut, *e.mark.Cut)
		case e.mark != nil && e.mark.Cleared != nil:
			v.Cleared = append(v.Cleared, *e.mark.Cleared)
		}
		if e.Seq != 0 {
			present[e.Seq] = true
		}
	}
	if len(sums) > 0 {
		k := slices.IndexFunc(sums, func(r SummaryRef) bool { return r.ID == id })
		if k < 0 {
			k = len(sums) - 1
		}
		v.Summary, from, to = sums[k].ID, sums[k].From, sums[k].To
		v.Others = slices.Delete(slices.Clone(sums), k, k+1)
		slices.SortFunc(v.Others, func(a, b SummaryRef) int { return int(a.From - b.From) })
		if len(v.Others) == 0 {
			v.Others = nil
		}
	}
	covered := func(seq int64) bool {
		return slices.ContainsFunc(sums, func(r SummaryRef) bool { return seq >= r.From && seq <= r.To })
	}
	for _, e := range entries {
		if e.CompactionID == 0 && !e.Pinned && e.Seq != 0 && covered(e.Seq) {
			v.Held = append(v.Held, e.Seq)
		}
	}
	for seq := int64(1); seq <= viewSeq; seq++ {
		if present[seq] || covered(seq) {
			continue
		}
		if n := len(v.Omitted); n > 0 && v.Omitted[n-1][1] == seq-1 {
			v.Omitted[n-1][1] = seq
		} else {
			v.Omitted = append(v.Omitted, SeqRange{seq, seq})
		}
	}
	return v, from, to
}

// ViewChanges is what a compaction's view leaves out of, or shows shortened in, the active
// context, beside its summary: the masked tool results, the omitted seq ranges and the cut
// results (see Report).
type ViewChanges struct {
	Masked  []int64    `json:"masked,omitempty"`
	Omitted []SeqRange `json:"omitted,omitempty"`
	Cut     []int64    `json:"cut,omitempty"`
	// Cleared are the assistant messages shown without their tool inputs or reasoning.
	Cleared []int64 `json:"cleared,omitempty"`
	// Summaries are the summaries the view shows beside the one of the report's range, each a
	// block of its own (see SummaryRef), oldest first.
	Summaries []SummaryRef `json:"summaries,omitempty"`
}

// changes returns the view's changes as a report shows them.
func (v view) changes() ViewChanges {
	var c ViewChanges
	for _, m := range v.Masked {
		c.Masked = append(c.Masked, m.Seq)
	}
	for _, x := range v.Cut {
		c.Cut = append(c.Cut, x.Seq)
	}
	c.Omitted = v.Omitted
	for _, x := range v.Cleared {
		c.Cleared = append(c.Cleared, x.Seq)
	}
	c.Summaries = v.Others
	return c
}

// viewChanges parses a stored view for a report; nil when there is none.
func viewChanges(text string) *ViewChanges {
	var v view
	if text == "" || json.Unmarshal([]byte(text), &v) != nil {
		return nil
	}
	c := v.changes()
	if len(c.Masked)+len(c.Omitted)+len(c.Cut)+len(c.Cleared)+len(c.Summaries) == 0 {
		return nil
	}
	return &c
}
