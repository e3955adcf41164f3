package memory_test

// Helpers of the tests of package memory_test alone. The helpers they share with the tests of
// other packages are internal/storetest (stores, imports, long threads, cascades of fakes or
// of the offline summarizer, the pin checks, the fault tests' stores) and internal/corpus (the
// recorded conversations of testdata).

import (
	"encoding/json"
)

// mustJSON is s as a JSON string, for a message's content.
func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
