package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestThreadMeta: a thread's metadata keeps a member per key, set and removed one at a time,
// the others as they were; writing it changes neither the thread's version nor its history;
// a value that is not JSON and a thread that does not exist are refused naming them.
func TestThreadMeta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Append(ctx, "m", []chat.Message{chat.TextMessage("user", "hello")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.ThreadMeta(ctx, "m", "a"); err != nil || v != nil {
		t.Fatalf("a new thread's member: %s %v", v, err)
	}
	before, err := s.Version(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"a", `{"warned":true,"compaction":3}`}, {"b", `"x"`}, {"a", `{"warned":false,"compaction":4}`}} {
		if err := s.SetThreadMeta(ctx, "m", kv[0], json.RawMessage(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	if a, _ := s.ThreadMeta(ctx, "m", "a"); string(a) != `{"warned":false,"compaction":4}` {
		t.Errorf("a = %s", a)
	}
	if b, _ := s.ThreadMeta(ctx, "m", "b"); string(b) != `"x"` {
		t.Errorf("b = %s", b)
	}
	if err := s.SetThreadMeta(ctx, "m", "b", nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.ThreadMeta(ctx, "m", "b"); b != nil {
		t.Errorf("b removed = %s", b)
	}
	if after, err := s.Version(ctx, "m"); err != nil || after != before {
		t.Errorf("the version changed: %+v, was %+v (%v)", after, before, err)
	}
	if h, err := s.History(ctx, "m"); err != nil || len(h) != 1 {
		t.Errorf("history: %d messages, %v", len(h), err)
	}
	if err := s.SetThreadMeta(ctx, "m", "a", json.RawMessage(`{oops`)); err == nil || !strings.Contains(err.Error(), `"a": the value is not valid JSON`) {
		t.Errorf("a value that is not JSON: %v", err)
	}
	if err := s.SetThreadMeta(ctx, "none", "a", json.RawMessage(`1`)); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Errorf("no such thread: %v", err)
	}
	if _, err := s.ThreadMeta(ctx, "none", "a"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Errorf("no such thread: %v", err)
	}
}
