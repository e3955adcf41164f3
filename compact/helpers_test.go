package compact_test

// Helpers of the tests of package compact_test alone. The helpers they share with the tests of
// other packages are internal/storetest (stores, imports, long threads, cascades of fakes or
// of the offline summarizer, the pin checks, the fault tests' stores) and internal/corpus (the
// recorded conversations of testdata).

import (
	"time"

	"github.com/memcascade/memcascade/cascade"
)

// fakeEntry is a cascade entry of provider p, named name, with a context window of window
// tokens.
func fakeEntry(name string, p cascade.Provider, window int) cascade.Entry {
	return cascade.Entry{Name: name, Type: "fake", Model: name + "-model", Provider: p, ContextWindow: window,
		MaxOutputTokens: 256, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
}
