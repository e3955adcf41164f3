package tokenizer

// maxLinear is the longest piece merged with the simple quadratic algorithm; longer pieces
// (long runs of letters, spaces or punctuation) use a heap.
const maxLinear = 128

// mergeLinear appends the tokens of piece (2 <= len(piece) <= maxLinear) to out, merging as
// tiktoken does: repeatedly the adjacent pair of parts whose concatenation has the lowest rank,
// the leftmost of equals, until no adjacent pair is a token.
func (t *rankTable) mergeLinear(piece string, out []uint32) []uint32 {
	var (
		// Part i is piece[starts[i]:starts[i+1]] and is token toks[i]; ranks[i] is the rank of
		// parts i and i+1 together, or noRank.
		starts [maxLinear + 1]uint8
		toks   [maxLinear]uint32
		ranks  [maxLinear]uint32
	)
	n := len(piece)
	if n > maxLinear {
		panic("tokenizer: piece too long for mergeLinear")
	}
	for i := 0; i < n; i++ {
		starts[i] = uint8(i)
		toks[i] = t.single[piece[i]]
	}
	starts[n] = uint8(n) // n <= maxLinear < 256
	for i := 0; i < n-1; i++ {
		ranks[i] = t.pairs[int(piece[i])<<8|int(piece[i+1])]
	}
	ranks[n-1] = noRank
	m := n // number of parts
	for m > 1 {
		best, bi := noRank, -1
		for i, r := range ranks[:m-1] {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		// Merge parts bi and bi+1.
		toks[bi] = best
		copy(starts[bi+1:m], starts[bi+2:m+1])
		copy(toks[bi+1:m-1], toks[bi+2:m])
		copy(ranks[bi+1:m-1], ranks[bi+2:m])
		m--
		if bi+1 < m {
			ranks[bi] = t.rank(piece[starts[bi]:starts[bi+2]])
		} else {
			ranks[bi] = noRank
		}
		if bi > 0 {
			ranks[bi-1] = t.rank(piece[starts[bi-1]:starts[bi+1]])
		}
	}
	return append(out, toks[:m]...)
}

// mergeHeap is mergeLinear for pieces of any length, in O(n log n): the candidate pairs are
// kept in a heap ordered by (rank, start), which picks the same pair as the leftmost lowest
// rank. Entries made stale by a merge are skipped when popped.
func (t *rankTable) mergeHeap(piece string, out []uint32) []uint32 {
	n := len(piece)
	// Parts are identified by their start; next[i]/prev[i] link the live parts (n is the end,
	// -1 the beginning); pairRank[i] is the rank of part i with its next part, or noRank.
	next := make([]int32, n)
	prev := make([]int32, n)
	toks := make([]uint32, n)
	pairRank := make([]uint32, n)
	h := make(pairHeap, 0, n)
	for i := range n {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
		toks[i] = t.single[piece[i]]
		pairRank[i] = noRank
		if i+1 < n {
			if r := t.pairs[int(piece[i])<<8|int(piece[i+1])]; r != noRank {
				pairRank[i] = r
				h = append(h, pairEntry{r, int32(i)})
			}
		}
	}
	h.init()
	// end returns the end of the part after the part starting at i (i must have a next part).
	end := func(i int32) int32 {
		j := next[i]
		return next[j]
	}
	for len(h) > 0 {
		e := h.pop()
		a := e.start
		if pairRank[a] != e.rank {
			continue // stale: part a was merged away or its right neighbour changed
		}
		b := next[a]
		toks[a] = e.rank
		next[a] = next[b]
		if next[b] < int32(n) {
			prev[next[b]] = a
		}
		pairRank[b] = noRank
		// a's pair with its new next part.
		pairRank[a] = noRank
		if next[a] < int32(n) {
			if r := t.rank(piece[a:end(a)]); r != noRank {
				pairRank[a] = r
				h.push(pairEntry{r, a})
			}
		}
		// The previous part's pair, now ending at a's new end.
		if p := prev[a]; p >= 0 {
			pairRank[p] = noRank
			if r := t.rank(piece[p:next[a]]); r != noRank {
				pairRank[p] = r
				h.push(pairEntry{r, p})
			}
		}
	}
	for i := int32(0); i < int32(n); i = next[i] {
		out = append(out, toks[i])
	}
	return out
}

type pairEntry struct {
	rank  uint32
	start int32
}

// pairHeap is a binary min-heap of pair entries by (rank, start), written for the type (as
// container/heap's algorithm, without boxing each entry in an interface: a long piece pushes
// millions).
type pairHeap []pairEntry

func (h pairHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].start < h[j].start
}

// init establishes the heap order.
func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i, len(h))
	}
}

func (h *pairHeap) push(e pairEntry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// pop removes and returns the least entry; h must not be empty.
func (h *pairHeap) pop() pairEntry {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	old.down(0, n)
	e := old[n]
	*h = old[:n]
	return e
}

func (h pairHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h pairHeap) down(i0, n int) {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
