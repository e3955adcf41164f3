package extractive

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestErrorLineMatchesPattern: isErrorLine, which skips the pattern for an ASCII line without an
// error word, answers what the pattern alone answers, on random lines of those words in any
// case, their pieces, positions, quotes and Unicode letters that fold to ASCII ones.
func TestErrorLineMatchesPattern(t *testing.T) {
	parts := []string{"error", "ERROR", "Error", "fatal", "Panic", "exception", "TraceBack", "failed", "FAILURE", "fail",
		"permission denied", "No such file or directory", "command not found", "not found", "connection refused",
		"does not exist", "cannot be", "could not", "unable to", "ValueError", "Exception", "err", "erro", "not",
		"main.go:12:", "12:", ":", " ", "  ", `"error"`, `"`, "x", "_", "a", "\u212a", "trace\u212aack", "\u017f", "é", "-", "."}
	// Unicode's case folding can make errorLineRE match a line without an ASCII error word: the
	// long s is an s.
	for _, line := range []string{"permi\u017f\u017fion denied", "no \u017fuch file or directory", "trace\u212aack: boom"} {
		if got, want := isErrorLine(line), errorLineRE.MatchString(line); got != want {
			t.Errorf("isErrorLine(%q) = %v, the pattern %v", line, got, want)
		}
	}
	if !errorLineRE.MatchString("permi\u017f\u017fion denied") {
		t.Error("the pattern does not fold the long s: the lines above test nothing")
	}
	rng := rand.New(rand.NewPCG(8, 9))
	matched := 0
	const n = 100000
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		line := strings.TrimSpace(b.String())
		want := !lineNumberRE.MatchString(line) && errorLineRE.MatchString(line)
		if got := isErrorLine(line); got != want {
			t.Fatalf("isErrorLine(%q) = %v, the pattern %v", line, got, want)
		}
		if want {
			matched++
		}
	}
	if matched == 0 || matched == n {
		t.Fatalf("%d of %d lines matched: the test does not tell the answers apart", matched, n)
	}
}
