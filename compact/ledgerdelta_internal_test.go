package compact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/facts"
)

// TestLedgerDeltaRoundTrip: the difference of a ledger from a base, applied to that base, gives
// the ledger back fact for fact, on random ledgers that keep, reorder, change (weight, seq,
// entity, outcome, dropped) and add facts, texts with quotes, escapes and non-ASCII included,
// either side empty.
func TestLedgerDeltaRoundTrip(t *testing.T) {
	texts := []string{"ZFA04Y", "HAT028", "$1,286", "2024-05-17", `say "hi"\n`, "café", "get_x(a=b)", "x\u2028y", ""}
	rng := rand.New(rand.NewPCG(5, 6))
	fact := func(i int) facts.Fact {
		f := facts.Fact{Kind: facts.Kinds()[rng.IntN(4)], Text: texts[rng.IntN(len(texts))] + strings.Repeat("z", i%3) + string(rune('a'+i%26)),
			Weight: rng.IntN(90), Seq: rng.IntN(500), Dropped: rng.IntN(4) == 0}
		switch rng.IntN(3) {
		case 1:
			f.Entity = f.Text
		case 2:
			f.Entity = texts[rng.IntN(len(texts))]
		}
		if rng.IntN(3) == 0 {
			f.Outcome = texts[rng.IntN(len(texts))]
		}
		return f
	}
	for n := range 3000 {
		base := make([]facts.Fact, rng.IntN(30))
		for i := range base {
			base[i] = fact(i)
		}
		var all []facts.Fact
		for _, f := range base {
			switch rng.IntN(6) {
			case 0: // left out
			case 1: // changed
				f.Weight++
				f.Dropped = !f.Dropped
				all = append(all, f)
			case 2: // a new fact before it
				all = append(all, fact(rng.IntN(100)), f)
			default:
				all = append(all, f)
			}
		}
		if n%5 == 0 && len(all) > 1 {
			rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		}
		r := &storedRow{id: 1, facts: base, whole: 1}
		text := string(appendDelta(nil, all, r))
		got, err := applyDelta(r, 2, text)
		if err != nil {
			t.Fatalf("base %v, ledger %v: %s: %v", base, all, text, err)
		}
		if !slices.Equal(got.facts, all) || got.base != r || got.chain != 1 || got.since != len(text) {
			t.Fatalf("base %v\nledger %v\nstored %s\nread back %v (chain %d, since %d)", base, all, text, got.facts, got.chain, got.since)
		}
	}
}

// TestLedgerDeltaRefused: a stored difference that does not fit its base is an error that says
// what is wrong, never a ledger.
func TestLedgerDeltaRefused(t *testing.T) {
	base := &storedRow{id: 1, facts: []facts.Fact{{Kind: facts.KindID, Text: "ZFA04Y", Weight: 50}, {Kind: facts.KindDate, Text: "2024-05-17", Weight: 30}}}
	for text, want := range map[string]string{
		`[{"kind":"id","text":"A","weight":1,"seq":1}]`:              "whole ledger",
		`{"edit":[0,3,0],"ents":[],"facts":[]}`:                      "copies facts 0 to 3 of a base of 2",
		`{"edit":[0,1,2],"ents":[],"facts":[["id","A",1,1,0,"",0]]}`: "takes 2 facts of the 1 left",
		`{"edit":[0,1],"ents":[],"facts":[]}`:                        "multiple of 3",
		`{"edit":[0,1,0],"ents":[],"facts":[["id","A",1,1,0,"",0]]}`: "1 facts no edit takes",
		`{"edit":[0,0,1],"ents":[],"facts":[[5,1,1,0,"",0]]}`:        "changes fact 5 of a base of 2",
		`{"edit":[0,0,1],"ents":[],"facts":[["id","A",1,1,3,"",0]]}`: "entity 3 of 0",
		`{"edit":[0,0,1],"ents":[],"facts":[["id","A",1,1,0,"",2]]}`: "dropped is 2",
		`{"edit":[0,0,1],"ents":[],"facts":[["id","A",1]]}`:          "not a fact",
		`{"edit":`: "unexpected end",
	} {
		_, err := applyDelta(base, 2, text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", text, err, want)
		}
	}
}
