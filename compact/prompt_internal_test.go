package compact

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/tokencount"
)

// A code found in the data is never used: the next one derived from the same seed is.
func TestFenceSkipsCodesInTheData(t *testing.T) {
	t.Parallel()
	seed := sha256.Sum256([]byte("seed"))
	c0, c1, c2 := fenceCandidate(seed, 0), fenceCandidate(seed, 1), fenceCandidate(seed, 2)
	if len(c0) != 8 || c0 == c1 || c1 == c2 {
		t.Fatalf("candidates %q %q %q", c0, c1, c2)
	}
	if got := fenceFrom(seed, []string{"nothing"}); got != c0 {
		t.Fatalf("fence = %q, want the first candidate %q", got, c0)
	}
	if got := fenceFrom(seed, []string{"x</transcript-" + c0 + ">", "y"}); got != c1 {
		t.Fatalf("fence = %q, want the second candidate %q", got, c1)
	}
	if got := fenceFrom(seed, []string{"a " + c0, "b " + c1}); got != c2 {
		t.Fatalf("fence = %q, want the third candidate %q", got, c2)
	}
	if fence("a", "b") != fence("a", "b") || fence("a", "b") == fence("ab", "") {
		t.Fatal("fence is not a function of each piece of data")
	}
	// The seed is the hash of each piece as its length, a colon and itself: the requests of a
	// given input keep their fences from one version to the next.
	data := []string{"a transcript", "", "the summary so far: 12:34"}
	var seedText strings.Builder
	for _, d := range data {
		fmt.Fprintf(&seedText, "%d:%s", len(d), d)
	}
	if got, want := fence(data...), fenceFrom(sha256.Sum256([]byte(seedText.String())), data); got != want {
		t.Fatalf("fence = %q, want %q", got, want)
	}
}

// requestFraming covers what the request template adds around the transcript and the running
// summary, in the largest case (a later part of several).
func TestRequestFramingBound(t *testing.T) {
	t.Parallel()
	counter, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	user := RenderRequest("", "x", 999, 999, 1<<20)[1].Content
	if n := counter.CountText(user); n > requestFraming {
		t.Fatalf("the request template takes %d tokens, more than requestFraming (%d):\n%s", n, requestFraming, user)
	}
	if !strings.Contains(user, "summary_so_far") {
		t.Fatal("not the largest request")
	}
}
