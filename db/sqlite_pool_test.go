package db

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestPoolKeepsConnections: the connections a burst of concurrent readers opens are kept for
// the next burst: none is closed as it comes back (each costs its pragmas, the schema parsed
// and the queries prepared again).
func TestPoolKeepsConnections(t *testing.T) {
	ctx := context.Background()
	h, err := openSQLite(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const readers = 30
	burst := func() {
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				err := h.ReadTx(ctx, func(q Querier) error {
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
	for i := range 2 {
		burst()
		if st := h.DB.Stats(); st.MaxIdleClosed != 0 || st.OpenConnections > poolIdle {
			t.Fatalf("after burst %d of %d readers: %d connections open, %d closed as idle; want none closed", i+1, readers, st.OpenConnections, st.MaxIdleClosed)
		}
	}
}
