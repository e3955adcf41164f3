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
		got, want := ctxIDFinder.find(w), slow.find(w)
		if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("%q: fast %v, pattern %v", w, got, want)
		}
		for _, st := range ctxIDFinder.starts(w) {
			if _, ok := ctxIDFast(w, st, min(len(w), st+ctxIDFinder.window)); ok {
				fast++
			}
		}
	}
	if fast < 10000 {
		t.Errorf("the hand matcher took %d starts: the test does not exercise it", fast)
	}
}

// TestFoldKeywordSet: a set that folds case finds in a text what the same set without folding
// finds in the text lower-cased, which is how the finders read a text before.
func TestFoldKeywordSet(t *testing.T) {
	kws := []string{"order", "pr", "pull request", "am", "a.m.", "head is now at", "cherry-pick", "sha"}
	fold, plain := newFoldKeywordSet(kws...), newKeywordSet(kws...)
	frags := []string{"Order", "ORDER", "order", "PR", "pR", "pull Request", "AM", "a.M.", "HEAD is now at", "Cherry-Pick",
		"sha", "ShA", " ", "x", "_", "7", "é", "K", "\u212a", "-"}
	rng := rand.New(rand.NewPCG(8, 9))
	type hit struct {
		p  int
		kw string
	}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		w := b.String()
		var got, want []hit
		fold.each(w, func(p int, kw string) { got = append(got, hit{p, kw}) })
		plain.each(asciiLower(w), func(p int, kw string) { want = append(want, hit{p, kw}) })
		if !slices.Equal(got, want) {
			t.Fatalf("each(%q) = %v, want %v", w, got, want)
		}
		got, want = nil, nil
		fold.eachWord(w, func(p int, kw string) { got = append(got, hit{p, kw}) })
		plain.eachWord(asciiLower(w), func(p int, kw string) { want = append(want, hit{p, kw}) })
		if !slices.Equal(got, want) {
			t.Fatalf("eachWord(%q) = %v, want %v", w, got, want)
		}
	}
}
