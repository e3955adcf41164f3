package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/jsontext"
)

// A thread's ledger holds the facts of every message its summaries cover, so it grows with the
// thread; stored whole with each compaction, the ledgers of a thread totalled the square of its
// length. A summary's row stores its ledger as the difference from the ledger of the summary it
// folds in (its ledger_base), and whole only now and then: when the differences written since
// the last whole ledger reach its size (so the whole ledgers of a thread total at most the
// differences written, and both grow with what changed), when the chain of differences reaches
// maxLedgerChain rows (so a read materializes a bounded number of them), or when there is no
// base to write against (the first summary, one applied before ledgers were stored).
//
// The difference is an edit of the base ledger: runs of its facts copied as they are, in order,
// and the facts that are new or changed (a weight raised by a repetition, a fact marked
// dropped) written out. Reading a summary's ledger reads its row, then its base's, down to a
// whole ledger, and applies the edits back up: the result is, fact for fact, the ledger that
// would have been stored whole. A revert brings back a summary whose row was never changed, and
// copy keeps each row's ledger_base pointing at the same row (renumbered with it).

// maxLedgerChain is the most rows a read of a ledger goes through before a whole one.
const maxLedgerChain = 64

// wholeLedgers makes every row store its ledger whole, as before differences were stored
// (tests compare the two).
var wholeLedgers = false

// storedRow is a summary's ledger as read from its compaction row.
type storedRow struct {
	id    int64
	facts []facts.Fact
	// chain is the number of differences between this ledger and the nearest whole one (0: it
	// is whole); since is their total size in bytes, and whole the size of that whole one.
	chain, since, whole int
	// base is the row this one's ledger is the difference from, as read with it (nil: whole,
	// and in a row read as a base: its own base is not kept).
	base *storedRow
}

// ledgerDelta is the JSON of a ledger stored as a difference (the row's ledger column starts
// with '{'; a whole one is a JSON array). Edit holds triples: a start and a count of the base's
// facts to copy, then how many of Facts come next. A fact is an array: a new one is [kind,
// text, weight, seq, entity, outcome, dropped], a changed one [i, weight, seq, entity,
// outcome, dropped], the base's fact i with these fields. The entity is 0 for none, -1 for the
// fact's own text, n for Ents[n-1]; dropped is 0 or 1.
type ledgerDelta struct {
	Edit  []int               `json:"edit"`
	Ents  []string            `json:"ents"`
	Facts [][]json.RawMessage `json:"facts"`
}

// readStored reads the ledger of compaction id, following its bases down to a whole ledger. A
// row without a ledger (a summary applied before ledgers were stored) gives nil.
func (c *Compactor) readStored(ctx context.Context, id int64) (*storedRow, error) {
	type row struct {
		id   int64
		text string
	}
	var chain []row
	for at := id; ; {
		text, base, err := c.Store.Compactions().Ledger(ctx, at)
		if err != nil {
			return nil, fmt.Errorf("compaction %d: ledger: %w", at, err)
		}
		chain = append(chain, row{at, text})
		if base == 0 {
			break
		}
		if base >= at { // an older row, always: no loop
			return nil, fmt.Errorf("compaction %d: stored ledger: its base %d is not an older compaction", at, base)
		}
		at = base
	}
	var r *storedRow
	for i := len(chain) - 1; i >= 0; i-- {
		text := chain[i].text
		if r == nil {
			if text == "" {
				if i > 0 {
					return nil, fmt.Errorf("compaction %d: stored ledger: its base %d has no ledger", chain[i-1].id, chain[i].id)
				}
				return nil, nil
			}
			fs, err := decodeLedger([]byte(text))
			if err != nil {
				return nil, fmt.Errorf("compaction %d: stored ledger: %w", chain[i].id, err)
			}
			r = &storedRow{id: chain[i].id, facts: fs, whole: len(text)}
			continue
		}
		r.base = nil // only the last row's base is kept (see encodeStored), not the whole chain
		next, err := applyDelta(r, chain[i].id, text)
		if err != nil {
			return nil, fmt.Errorf("compaction %d: stored ledger: %w", chain[i].id, err)
		}
		r = next
	}
	return r, nil
}

// applyDelta is the row id whose ledger, text, is the difference from base's.
func applyDelta(base *storedRow, id int64, text string) (*storedRow, error) {
	if len(text) == 0 || text[0] != '{' {
		return nil, fmt.Errorf("a ledger_base (%d) with a whole ledger", base.id)
	}
	var d ledgerDelta
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return nil, err
	}
	lits := make([]facts.Fact, len(d.Facts))
	for i, raw := range d.Facts {
		if err := d.fact(&lits[i], raw, base.facts); err != nil {
			return nil, fmt.Errorf("fact %d: %w", i, err)
		}
	}
	if len(d.Edit)%3 != 0 {
		return nil, errors.New("an edit of a length not a multiple of 3")
	}
	n := len(lits)
	for i := 0; i < len(d.Edit); i += 3 {
		n += d.Edit[i+1]
	}
	out := make([]facts.Fact, 0, n)
	for i := 0; i < len(d.Edit); i += 3 {
		start, count, k := d.Edit[i], d.Edit[i+1], d.Edit[i+2]
		if start < 0 || count < 0 || start > len(base.facts)-count {
			return nil, fmt.Errorf("edit %d copies facts %d to %d of a base of %d", i/3, start, start+count, len(base.facts))
		}
		if k < 0 || k > len(lits) {
			return nil, fmt.Errorf("edit %d takes %d facts of the %d left", i/3, k, len(lits))
		}
		out = append(out, base.facts[start:start+count]...)
		out, lits = append(out, lits[:k]...), lits[k:]
	}
	if len(lits) > 0 {
		return nil, fmt.Errorf("%d facts no edit takes", len(lits))
	}
	if len(out) == 0 {
		out = nil
	}
	return &storedRow{id: id, facts: out, chain: base.chain + 1, since: base.since + len(text), whole: base.whole, base: base}, nil
}

// fact decodes raw, a fact of d, into f.
func (d *ledgerDelta) fact(f *facts.Fact, raw []json.RawMessage, base []facts.Fact) error {
	var rest []json.RawMessage
	switch {
	case len(raw) == 7 && len(raw[0]) > 0 && raw[0][0] == '"':
		var kind string
		if err := json.Unmarshal(raw[0], &kind); err != nil {
			return err
		}
		if err := json.Unmarshal(raw[1], &f.Text); err != nil {
			return err
		}
		f.Kind, rest = facts.Kind(kind), raw[2:]
	case len(raw) == 6:
		var j int
		if err := json.Unmarshal(raw[0], &j); err != nil {
			return err
		}
		if j < 0 || j >= len(base) {
			return fmt.Errorf("changes fact %d of a base of %d", j, len(base))
		}
		f.Kind, f.Text, rest = base[j].Kind, base[j].Text, raw[1:]
	default:
		return errors.New("not a fact of a stored difference")
	}
	var ent, dropped int
	for i, v := range []any{&f.Weight, &f.Seq, &ent, &f.Outcome, &dropped} {
		if err := json.Unmarshal(rest[i], v); err != nil {
			return err
		}
	}
	switch {
	case ent == -1:
		f.Entity = f.Text
	case ent > 0 && ent <= len(d.Ents):
		f.Entity = d.Ents[ent-1]
	case ent != 0:
		return fmt.Errorf("entity %d of %d", ent, len(d.Ents))
	}
	if dropped != 0 && dropped != 1 {
		return fmt.Errorf("dropped is %d", dropped)
	}
	f.Dropped = dropped == 1
	return nil
}

// encodeStored is the text and ledger_base of the row self stores ledger all in: the difference
// from base's ledger (base: the stored ledger of a summary the middle folded in; nil: none), or
// all whole (base 0).
func encodeStored(all []facts.Fact, base *storedRow, self int64) (text string, baseID int64) {
	for base != nil && base.id >= self { // an earlier pass of this compaction: its base
		base = base.base
	}
	if base == nil || len(all) == 0 || wholeLedgers || base.chain >= maxLedgerChain {
		return wholeText(all), 0
	}
	b := appendDelta(nil, all, base)
	if base.since+len(b) >= base.whole { // as much written since the last whole ledger as it holds
		return wholeText(all), 0
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), base.id
}

// wholeText is all encoded whole.
func wholeText(all []facts.Fact) string {
	b := encodeLedger(all)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again: no copy of it
}

// appendDelta appends the difference of all from base's ledger (see ledgerDelta).
func appendDelta(b []byte, all []facts.Fact, base *storedRow) []byte {
	type key struct {
		kind facts.Kind
		text string
	}
	at := make(map[key]int, len(base.facts))
	for i, f := range base.facts {
		k := key{f.Kind, f.Text}
		if _, ok := at[k]; !ok {
			at[k] = i
		}
	}
	var (
		edit []int
		lits []int // per literal: the base's fact it changes, or -1
		news []facts.Fact
	)
	start, count, k := 0, 0, 0 // the triple being made
	for _, f := range all {
		j, ok := at[key{f.Kind, f.Text}]
		if ok && sameStored(base.facts[j], f) {
			if k == 0 && count > 0 && j == start+count {
				count++
				continue
			}
			if count > 0 || k > 0 {
				edit = append(edit, start, count, k)
			}
			start, count, k = j, 1, 0
			continue
		}
		if !ok {
			j = -1
		}
		lits, news = append(lits, j), append(news, f)
		k++
	}
	if count > 0 || k > 0 {
		edit = append(edit, start, count, k)
	}
	ents := map[string]int{}
	var entList []string
	for _, f := range news {
		if f.Entity != "" && f.Entity != f.Text && ents[f.Entity] == 0 {
			entList = append(entList, f.Entity)
			ents[f.Entity] = len(entList)
		}
	}
	b = append(b, `{"edit":[`...)
	for i, v := range edit {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, `],"ents":[`...)
	for i, e := range entList {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, e)
	}
	b = append(b, `],"facts":[`...)
	for i, f := range news {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		if j := lits[i]; j >= 0 {
			b = strconv.AppendInt(b, int64(j), 10)
		} else {
			b = jsontext.AppendString(b, string(f.Kind))
			b = append(b, ',')
			b = jsontext.AppendString(b, f.Text)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(f.Weight), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(f.Seq), 10)
		b = append(b, ',')
		switch {
		case f.Entity == "":
			b = append(b, '0')
		case f.Entity == f.Text:
			b = append(b, "-1"...)
		default:
			b = strconv.AppendInt(b, int64(ents[f.Entity]), 10)
		}
		b = append(b, ',')
		b = jsontext.AppendString(b, f.Outcome)
		if f.Dropped {
			b = append(b, ",1]"...)
		} else {
			b = append(b, ",0]"...)
		}
	}
	return append(b, "]}"...)
}

// sameStored reports whether a and b are stored the same (Key and Of are not stored).
func sameStored(a, b facts.Fact) bool {
	return a.Kind == b.Kind && a.Text == b.Text && a.Weight == b.Weight && a.Seq == b.Seq &&
		a.Entity == b.Entity && a.Outcome == b.Outcome && a.Dropped == b.Dropped
}
