package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// TestBadUTF8InLookups: text PostgreSQL cannot hold, given where a command only looks
// something up (search text, a thread id to show or export, a thread filter), finds nothing on
// both backends instead of failing on PostgreSQL; names given through the library holding it
// are refused on both.
func TestBadUTF8InLookups(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	if _, err := s.Append(ctx, "t", []memory.Message{memory.TextMessage(memory.RoleUser, "hello world")}, memory.AppendOptions{}); err != nil {
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
	m := memory.TextMessage(memory.RoleUser, "x")
	m.Name = "a\xffb"
	if _, err := s.Append(ctx, "t", []memory.Message{m}, memory.AppendOptions{}); err == nil {
		t.Errorf("a name with a byte that is not UTF-8 was stored")
	}
}
