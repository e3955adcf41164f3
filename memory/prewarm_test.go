package memory_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// loadCounter is a counter whose vocabulary is loaded by Load, counted.
type loadCounter struct {
	tokencount.Counter
	loads *atomic.Int64
}

func (c loadCounter) Encoding() string { return "test-loads" }
func (c loadCounter) Load() error      { c.loads.Add(1); return nil }

// TestPrewarm checks that Prewarm loads the encoding of new threads and leaves the pool with
// the connections it was asked for, idle, and that the store works as before after it.
func TestPrewarm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	c := loadCounter{Counter: base, loads: new(atomic.Int64)}
	s, _ := storetest.OpenWith(t, memory.Options{Counter: c})
	if n := c.loads.Load(); n != 0 {
		t.Fatalf("loaded %d times before Prewarm", n)
	}
	const conns = 5
	if err := s.Prewarm(ctx, conns); err != nil {
		t.Fatal(err)
	}
	if c.loads.Load() == 0 {
		t.Error("Prewarm did not load the encoding of new threads")
	}
	if st := s.DB().DB.Stats(); st.Idle < conns {
		t.Errorf("after Prewarm(%d): %d connections idle (%d open)", conns, st.Idle, st.OpenConnections)
	}
	msg := chat.TextMessage(chat.RoleUser, "hello")
	if _, err := s.Append(ctx, "warm", []chat.Message{msg}, memory.AppendOptions{Live: true}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Active(ctx, "warm")
	if err != nil || len(a.Entries) != 1 || a.Entries[0].Tokens != base.CountMessage(msg) {
		t.Fatalf("after Prewarm, the thread appended to reads %+v, %v", a.Entries, err)
	}
}
