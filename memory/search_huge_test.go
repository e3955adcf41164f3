package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/redact"
)

// TestSearchHugeMessage: a message of 4 MB whose words a query matches a hundred thousand times
// is found, with its snippet, as any message is; both backends index, and find, the first
// 100,000 characters of a message's text (a word after them is not found); deleting the thread
// leaves the index consistent. Before, SQLite indexed all of it and built the snippet over it:
// a search for a word of every line of a 50 MB message ran for over 20 minutes.
func TestSearchHugeMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	var b strings.Builder
	b.WriteString("build started: earlyword\n")
	for i := 0; b.Len() < 4<<20; i++ {
		b.WriteString("step compiled package of the release in good time\n")
	}
	b.WriteString("build finished: lateword\n")
	msgs := []chat.Message{chat.TextMessage(chat.RoleUser, "read the build log"), chat.TextMessage(chat.RoleAssistant, "the log follows"),
		chat.TextMessage(chat.RoleUser, b.String())}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		hits  int
	}{{"release", 1}, {"earlyword", 1}, {"lateword", 0}, {"build", 2}} {
		hits, err := s.Search(ctx, tc.query, memory.SearchOptions{Thread: "t", Redact: redact.Default()})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if len(hits) != tc.hits {
			t.Fatalf("%s: %d hits, want %d: %+v", tc.query, len(hits), tc.hits, hits)
		}
		for _, h := range hits {
			if len(h.Snippet) > 2000 || !strings.Contains(strings.ToLower(h.Snippet), tc.query) {
				t.Fatalf("%s: snippet of %d bytes: %.200q", tc.query, len(h.Snippet), h.Snippet)
			}
		}
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Check(ctx); err != nil {
		t.Fatalf("check after deleting the thread: %v", err)
	}
}
