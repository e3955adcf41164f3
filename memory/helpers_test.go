package memory_test

// Helpers of the tests of package memory_test alone. The helpers they share with the tests of
// other packages are internal/storetest (stores, imports, long threads, cascades of fakes or
// of the offline summarizer, the pin checks, the fault tests' stores) and internal/corpus (the
// recorded conversations of testdata).

import (
	"encoding/json"
	"testing"

	"github.com/memcascade/memcascade/tokencount"
)

// counter is the built-in counter of a built-in encoding.
func counter(t testing.TB, encoding string) *tokencount.BPECounter {
	t.Helper()
	c, err := tokencount.NewCounter(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustJSON is s as a JSON string, for a message's content.
func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
