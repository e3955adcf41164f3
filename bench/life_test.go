package main

import (
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/lifesim"
)

// TestLifeRowsMiss: a life row is MISSED when its target is: more compactions per 100 turns
// than docs/compaction.md allows at the limit, a fact lost unnamed, a life stopped at a loss, a
// compaction that left the newest user message out; and ok when none is.
func TestLifeRowsMiss(t *testing.T) {
	verdicts := func(limit int, st lifesim.Stats, broken int) map[string]string {
		b := &bench{}
		b.addLife(limit, 1, st, broken, time.Second)
		out := map[string]string{}
		for _, r := range b.rows {
			out[r.name] = r.verdict
		}
		return out
	}
	good := lifesim.Stats{Turns: 100, Compactions: 10, Kept: 5, Named: 1}
	for name, v := range verdicts(4096, good, 0) {
		if v == "MISSED" {
			t.Errorf("%s: MISSED on figures that meet every target", name)
		}
	}
	cases := []struct {
		limit  int
		st     lifesim.Stats
		broken int
		row    string
	}{
		{4096, lifesim.Stats{Turns: 100, Compactions: 33}, 0, "life at 4,096: compactions per 100 turns"},
		{8192, lifesim.Stats{Turns: 100, Compactions: 17}, 0, "life at 8,192: compactions per 100 turns"},
		{32768, lifesim.Stats{Turns: 100, Compactions: 5}, 0, "life at 32,768: compactions per 100 turns"},
		{4096, lifesim.Stats{Turns: 100, Compactions: 1, Lost: 1}, 0, "life at 4,096: facts and actions kept / named dropped / lost unnamed"},
		{4096, lifesim.Stats{Turns: 100, Compactions: 1}, 1, "life at 4,096: facts and actions kept / named dropped / lost unnamed"},
		{4096, lifesim.Stats{Turns: 100, Compactions: 1, NewestUserMissing: 1}, 0, "life at 4,096: compactions that left the newest user message out"},
	}
	for _, c := range cases {
		if v := verdicts(c.limit, c.st, c.broken)[c.row]; v != "MISSED" {
			t.Errorf("%s with %+v (%d broken): verdict %q, want MISSED", c.row, c.st, c.broken, v)
		}
	}
	if v := verdicts(2048, lifesim.Stats{Turns: 100, Compactions: 90}, 0)["life at 2,048: compactions per 100 turns"]; v != "" {
		t.Errorf("2,048 has no target for compactions, verdict %q", v)
	}
}

// TestLedgerRow: the ledger row lives its 300-turn life and meets its target (ledgers under
// twice the messages' bytes).
func TestLedgerRow(t *testing.T) {
	b := &bench{dir: t.TempDir()}
	if err := b.ledgerRow(1); err != nil {
		t.Fatal(err)
	}
	if len(b.rows) != 1 || b.rows[0].verdict != "ok" {
		t.Fatalf("rows %+v, want one, ok", b.rows)
	}
}
