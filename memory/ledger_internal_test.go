package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/memcascade/memcascade/facts"
)

// TestStoredLedgerOneMerge: storedLedger merges the dropped facts and those earlier reports
// named in one Merge; the ledger it stores is the one the two merges in turn gave, on random
// ledgers whose facts repeat within and across the three lists (in other cases, weights and
// kinds), with either list empty.
func TestStoredLedgerOneMerge(t *testing.T) {
	texts := []string{"W000123", "w000123", "HAT028", "$1,286", "2024-05-17", "cancel_reservation(reservation_id=ZFA04Y)", "ZFA04Y", "café"}
	rng := rand.New(rand.NewPCG(3, 4))
	list := func(n int) []facts.Fact {
		fs := make([]facts.Fact, n)
		for i := range fs {
			fs[i] = facts.Fact{Kind: facts.Kinds()[rng.IntN(3)], Text: texts[rng.IntN(len(texts))], Weight: rng.IntN(4) * 10, Seq: rng.IntN(50), Dropped: rng.IntN(3) == 0}
		}
		return fs
	}
	for range 2000 {
		ledger, dropped, earlier := list(rng.IntN(8)), list(rng.IntN(4)), list(rng.IntN(4))
		got, err := storedLedger(ledger, earlier, dropped)
		if err != nil {
			t.Fatal(err)
		}
		// What storedLedger stored before: the two merges in turn.
		gone := make([]facts.Fact, len(dropped))
		named := map[[2]string]bool{}
		for i, f := range dropped {
			f.Dropped = true
			gone[i] = f
			named[[2]string{string(f.Kind), f.Text}] = true
		}
		out := make([]facts.Fact, len(ledger))
		for i, f := range ledger {
			f.Dropped = named[[2]string{string(f.Kind), f.Text}]
			out[i] = f
		}
		if want := string(encodeLedger(facts.Merge(facts.Merge(out, gone), earlier))); got != want {
			t.Fatalf("ledger %v, dropped %v, earlier %v:\nstored %s\nwant   %s", ledger, dropped, earlier, got, want)
		}
	}
}
