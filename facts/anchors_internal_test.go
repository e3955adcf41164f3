package facts

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCtxIDFast: the hand matcher of the context ids gives what the pattern gives, on random
// texts of keywords, blanks, separators and ids of every shape the pattern tells apart.
func TestCtxIDFast(t *testing.T) {
	slow := ctxIDFinder
	slow.fast = nil
	frags := []string{"order", "Order", "ORDER", "pull request", "pr", "user", "issue", " ", "  ", "\t", ":", "#", "=", " is ", "is",
		"id", "ID", "number", "no.", "No", "num", "code", "W000123", "HAT12", "ab-12", "ab-", "x", "7", "-", "_", "mia_li_3668",
		"node5", "isa9", "é", "ß", ".", ",", "\n", "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6"}
	rng := rand.New(rand.NewPCG(5, 6))
	fast := 0
	for n := range 200000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		if n%3 == 0 { // the common shape
			b.Reset()
			b.WriteString(frags[rng.IntN(7)] + strings.Repeat(" ", 1+rng.IntN(2)) + frags[22+rng.IntN(5)] + frags[rng.IntN(len(frags))])
		}
		w := b.String()
		lower := asciiLower(w)
		got, want := ctxIDFinder.find(w, lower), slow.find(w, lower)
		if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("%q: fast %v, pattern %v", w, got, want)
		}
		for _, st := range ctxIDFinder.starts(w, lower) {
			if _, ok := ctxIDFast(w, lower, st, min(len(w), st+ctxIDFinder.window)); ok {
				fast++
			}
		}
	}
	if fast < 10000 {
		t.Errorf("the hand matcher took %d starts: the test does not exercise it", fast)
	}
}
