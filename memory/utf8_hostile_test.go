package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestBadUTF8InLookups: text PostgreSQL cannot hold, given where a command only looks
// something up (search text, a thread id to show or export, a thread filter), finds nothing on
// both backends instead of failing on PostgreSQL; names given through the library holding it
// are refused on both.
func TestBadUTF8InLookups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage(chat.RoleUser, "hello world")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"hello\xff", "\xffhello", "hel\x00lo wor\xffld*"} {
		if _, err := s.Search(ctx, q, memory.SearchOptions{}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
	for _, id := range []string{"t\xff", "\xff"} {
		if _, err := s.History(ctx, id); !errors.Is(err, memory.ErrThreadNotFound) {
			t.Errorf("history of %q: %v, want ErrThreadNotFound", id, err)
		}
	}
	// Provider names from a config file or a command line: looked up, never stored as such.
	if atts, err := s.Attempts(ctx, "p\xff", 0); err != nil || len(atts) != 0 {
		t.Errorf("attempts of a provider named with a bad byte: %v, %v", atts, err)
	}
	if found, err := cascade.New(s.DB()).ResetCooldown(ctx, "p\x00"); found || err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("reset of a provider named with NUL: %v, %v; want unknown provider", found, err)
	}
	m := chat.TextMessage(chat.RoleUser, "x")
	m.Name = "a\xffb"
	if _, err := s.Append(ctx, "t", []chat.Message{m}, memory.AppendOptions{}); err == nil {
		t.Errorf("a name with a byte that is not UTF-8 was stored")
	}
}
