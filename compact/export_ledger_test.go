package compact

import (
	"context"

	"github.com/memcascade/memcascade/facts"
)

// SetWholeLedgers makes every compaction store its ledger whole, as before differences were
// stored, until the function it returns is called. A test that calls it must not run in
// parallel with others that compact.
func SetWholeLedgers(v bool) (restore func()) {
	old := wholeLedgers
	wholeLedgers = v
	return func() { wholeLedgers = old }
}

// StoredLedger is the ledger stored with compaction id as a compaction reads it (nil: none),
// and the number of differences it was read through.
func (c *Compactor) StoredLedger(ctx context.Context, id int64) ([]facts.Fact, int, error) {
	r, err := c.readStored(ctx, id)
	if r == nil || err != nil {
		return nil, 0, err
	}
	return r.facts, r.chain, nil
}
