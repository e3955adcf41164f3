package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
)

// TestPoolKeepsConnections: a burst of readers, more than the pool's bound, runs on at most
// poolConns connections, and the pool keeps them: none is closed as it comes back, so the
// next burst opens none (each costs its pragmas, the schema parsed and the queries prepared
// again).
func TestPoolKeepsConnections(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, filepath.Join(t.TempDir(), "p.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	burst := func() {
		var wg sync.WaitGroup
		for range 5 * poolConns() {
			wg.Go(func() {
				err := h.ReadTx(ctx, func(q db.Querier) error {
					_, err := q.ListThreads(ctx, "")
					time.Sleep(2 * time.Millisecond) // the readers overlap
					return err
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	burst()
	st := h.DB.Stats()
	if st.MaxIdleClosed != 0 || st.OpenConnections > poolConns() {
		t.Fatalf("after a burst of readers: %d connections open, %d closed as idle; want at most %d open, none closed", st.OpenConnections, st.MaxIdleClosed, poolConns())
	}
	burst()
	if st := h.DB.Stats(); st.MaxIdleClosed != 0 || st.OpenConnections > poolConns() {
		t.Fatalf("after a second burst: %d connections open, %d closed as idle", st.OpenConnections, st.MaxIdleClosed)
	}
}
