package tokenizer

import (
	"slices"
	"strings"
	"sync/atomic"
)

// cacheSlots is the number of pieces the cache holds at most. Each entry keeps a copy of its
// piece (at most maxLinear bytes) and its tokens, so the cache stays under a few megabytes.
const cacheSlots = 1 << 13

// pieceCache remembers the tokens of pieces that are not themselves tokens. It is
// direct-mapped: a piece can only be in the slot its hash selects, and a new piece replaces
// whatever was there. Entries are immutable and swapped atomically, so readers need no lock.
type pieceCache struct {
	slots [cacheSlots]atomic.Pointer[cacheEntry]
}

type cacheEntry struct {
	piece string
	toks  []uint32
}

func newPieceCache() *pieceCache { return &pieceCache{} }

// get returns the tokens of piece, whose hash (hashKey) is h, if they are cached. The caller must
// not modify them.
func (c *pieceCache) get(piece string, h uint64) ([]uint32, bool) {
	if e := c.slots[h&(cacheSlots-1)].Load(); e != nil && e.piece == piece {
		return e.toks, true
	}
	return nil, false
}

// put caches the tokens of piece, whose hash (hashKey) is h. It copies piece and toks.
func (c *pieceCache) put(piece string, h uint64, toks []uint32) {
	e := &cacheEntry{piece: strings.Clone(piece), toks: slices.Clone(toks)}
	c.slots[h&(cacheSlots-1)].Store(e)
}
