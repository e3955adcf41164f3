package compact_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
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
			s, _ := storetest.Open(t)
			load(t, s, "t")
			w, _, mid, target := throughWindow(t, s, 2000, window, 1, nil)
			t.Logf("%s: middle %d tokens, %d requests (target %d), %d prompt tokens", name, mid, w.requests, target, w.prompt)
			if w.requests > target {
				t.Errorf("%d requests for a middle of %d tokens, over the target %d", w.requests, mid, target)
			}
		})
	}
}
