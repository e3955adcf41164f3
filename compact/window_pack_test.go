package compact_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// shortMessages appends n short user/assistant exchanges after a system prompt: a thread of
// many small units, each far below a request.
func shortMessages(t testing.TB, s *memory.Store, thread string, n int) {
	t.Helper()
	msgs := []chat.Message{chat.TextMessage("system", "You are a terse assistant.")}
	for i := range n {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Is item %d in stock?", i)),
			chat.TextMessage("assistant", fmt.Sprintf("Yes, item %d: %d left.", i, i%17)))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSmallWindowAnyThread: a summarizer with a 1,024-token window compacts every recorded
// thread, and a thread of many short messages, within 1.5 × ceil(middle / (window / 2)) + 2
// requests, every request within the window: small units are packed into requests.
func TestSmallWindowAnyThread(t *testing.T) {
	t.Parallel()
	const window = 1024
	threads := map[string]func(testing.TB, *memory.Store, string){
		"short messages": func(t testing.TB, s *memory.Store, thread string) { shortMessages(t, s, thread, 700) },
	}
	for _, f := range corpus.Conversations(t) {
		threads[filepath.Base(f)] = func(t testing.TB, s *memory.Store, thread string) { storetest.Import(t, s, thread, f) }
	}
	for name, load := range threads {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := storetest.Open(t)
			load(t, s, "t")
			counter, err := s.Counter(tokencount.EncodingO200k)
			if err != nil {
				t.Fatal(err)
			}
			w := &windowProvider{}
			e := fakeEntry("local", w.fake(counter, window, nil), window)
			e.MaxOutputTokens = 1024
			c := compact.New(s, cascade.New(s.DB(), e), compact.Settings{TokenLimit: 2000})
			dry, err := c.Compact(ctx, "t", compact.Options{Force: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if len(w.over) > 0 {
				t.Fatalf("requests over the window of %d: %v", window, w.over)
			}
			mid := middleTokens(t, s, dry)
			target := int(1.5*float64((mid+window/2-1)/(window/2))) + 2
			t.Logf("%s: middle %d tokens, %d requests (target %d), %d prompt tokens", name, mid, w.requests, target, w.prompt)
			if w.requests > target {
				t.Errorf("%d requests for a middle of %d tokens, over the target %d", w.requests, mid, target)
			}
		})
	}
}
