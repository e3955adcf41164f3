package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/testdb"
)

// TestLightRangeRefusesAnotherThread: the parts of a long range read outside the caller's
// transaction check that their snapshot holds the thread the caller read (created at the same
// instant, its last seq at or past the part's end); a thread deleted and made again under the
// same id meanwhile is an error, never a mix of two threads' messages.
func TestLightRangeRefusesAnotherThread(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := make([]chat.Message, 3*parallelReadMin)
	for i := range msgs {
		msgs[i] = chat.TextMessage(chat.RoleUser, fmt.Sprint("message ", i))
	}
	if _, err := s.Append(ctx, "t", msgs, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(msgs))
	es, err := s.readRange(ctx, s.h.Q(), th, 1, n, true)
	if err != nil || int64(len(es)) != n || es[0].Seq != 1 || es[n-1].Seq != n {
		t.Fatalf("the thread as read: %d entries, err %v", len(es), err)
	}
	other := th
	other.CreatedAt = th.CreatedAt.Add(-1e6) // made a millisecond before: another thread
	if _, err := s.readRange(ctx, s.h.Q(), other, 1, n, true); !errors.Is(err, ErrThreadNotFound) {
		t.Fatalf("a thread made at another instant: err %v, want ErrThreadNotFound", err)
	}
	if _, err := s.readRange(ctx, s.h.Q(), th, 1, n+parallelReadMin, true); !errors.Is(err, ErrThreadNotFound) {
		t.Fatalf("a range past the thread's last seq: err %v, want ErrThreadNotFound", err)
	}
}
