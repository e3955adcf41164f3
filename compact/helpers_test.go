package compact_test

// Helpers of the tests of package compact_test alone. The helpers they share with the tests of
// other packages are internal/storetest (stores, imports, long threads, cascades of fakes or
// of the offline summarizer, the pin checks, the fault tests' stores) and internal/corpus (the
// recorded conversations of testdata).

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// fakeEntry is a cascade entry of provider p, named name, with a context window of window
// tokens.
func fakeEntry(name string, p cascade.Provider, window int) cascade.Entry {
	return cascade.Entry{Name: name, Type: "fake", Model: name + "-model", Provider: p, ContextWindow: window,
		MaxOutputTokens: 256, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
}

// storedText is every report the store holds (as JSON) and every summary written with its
// facts (spans, from Config.OnSummarized): what a compaction left in the database.
func storedText(t testing.TB, s *memory.Store, spans []compact.Span) *strings.Builder {
	t.Helper()
	var stored strings.Builder
	reps, err := s.Reports(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		full, err := s.Report(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(full)
		stored.Write(b)
	}
	for _, sp := range spans {
		b, _ := json.Marshal(sp.Facts)
		stored.Write(b)
		stored.WriteString(sp.Summary)
	}
	return &stored
}
