package facts

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestContainsMatchesScan: the word-set lookup of summaryIndex.contains answers exactly what
// the scan containsToken answers, on texts and needles built from a small alphabet of word and
// separator runes (so matches, near-matches and glued tokens are frequent).
func TestContainsMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "1", "_", "é", " ", "-", ".", "$", "/", "z9", "ab"}
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		text := normalize(gen(r.IntN(40)))
		needle := normalize(gen(1 + r.IntN(5)))
		idx := newSummaryIndex(text)
		if got, want := idx.contains(needle), containsToken(idx.norm, needle); got != want {
			t.Fatalf("contains(%q) in %q = %v, the scan says %v", needle, idx.norm, got, want)
		}
	}
}
