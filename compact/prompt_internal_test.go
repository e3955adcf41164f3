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

// The request is the template's, byte for byte, when renderRequest writes the transcript
// between the parts of the template before and after it; a template whose transcript action
// is not once at its top level is executed whole.
func TestRequestSplitAtTheTranscript(t *testing.T) {
	t.Parallel()
	if requestHead == nil || requestTail == nil {
		t.Fatal("the request template is not split at its transcript")
	}
	transcriptText := "[#2 user]\nmessage 2 about order W000002 {{.Fence}}\n\n[#3 assistant]\nok"
	for _, c := range []struct {
		running, previous string
		chunk, chunks     int
	}{{"", "", 1, 1}, {"the summary so far", "", 2, 3}, {"", "## Work done\nold summary", 1, 1}, {"", "", 1, 2}} {
		data := map[string]any{
			"Transcript": transcriptText, "Running": c.running, "Previous": c.previous, "Chunk": c.chunk, "Chunks": c.chunks,
			"Words": 300, "Fence": fence(transcriptText, c.running, c.previous),
		}
		if c.previous == "" {
			data["Fence"] = fence(transcriptText, c.running)
		}
		var whole strings.Builder
		if err := requestTemplate.Execute(&whole, data); err != nil {
			t.Fatal(err)
		}
		if got := renderRequest("system", transcriptText, c.running, c.previous, c.chunk, c.chunks, 400)[1].Content; got != whole.String() {
			t.Fatalf("%+v: split request\n%s\nwant\n%s", c, got, whole.String())
		}
	}
	for _, text := range []string{"no transcript", "{{.Transcript}} twice {{.Transcript}}", "{{if .Chunk}}{{.Transcript}}{{end}}"} {
		if h, tl := splitRequest(text); h != nil || tl != nil {
			t.Fatalf("%q was split", text)
		}
	}
	if h, tl := splitRequest("a {{.Chunk}} {{.Transcript}} b {{.Words}}"); h == nil || tl == nil {
		t.Fatal("a top-level transcript action was not split at")
	}
}
