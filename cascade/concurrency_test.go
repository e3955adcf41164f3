package cascade_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// TestConcurrentRequests: a task sends its requests in parallel, as many at once as the
// entry's Concurrency that it reads from its target; every request is logged, the provider
// sees that many at once, and Observe is never called twice at the same time.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	id := insertCompaction(t, sqldb)
	// The first three requests wait until all three are in flight (a barrier, not a timing):
	// a cascade that sent them one at a time would never release them (the safety net below
	// then fails the test instead of hanging).
	var inFlight, peak, arrived atomic.Int64
	full := make(chan struct{})
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if a := arrived.Add(1); a == 3 {
			close(full)
		} else if a < 3 {
			select {
			case <-full:
			case <-time.After(10 * time.Second):
				return llm.Response{}, fmt.Errorf("only %d requests ever in flight", peak.Load())
			}
		}
		return llm.Response{Text: "part", FinishReason: "stop"}, nil
	}}
	e := fakeEntry("local", fake)
	e.Concurrency = 3
	var observing, overlapped atomic.Bool
	observe := func(cascade.Event) {
		if observing.Swap(true) {
			overlapped.Store(true)
		}
		time.Sleep(time.Millisecond)
		observing.Store(false)
	}
	c := cascade.NewWith(sqldb, cascade.Options{Observe: observe}, e)
	const chunks = 9
	_, err := c.Run(context.Background(), id, func(ctx context.Context, target llm.Target, k llm.Completer) (string, error) {
		sem := make(chan struct{}, target.Concurrency)
		var wg sync.WaitGroup
		errs := make(chan error, chunks)
		for i := range chunks {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				_, err := k.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: fmt.Sprint("chunk ", i)}}})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return "", err
			}
		}
		return "merged", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("%d requests in flight at most, want 3 (the entry's concurrency)", p)
	}
	if overlapped.Load() {
		t.Error("Observe was called while another call was running")
	}
	usage, err := compactionUsage(t, sqldb, id)
	if err != nil || usage.Requests != chunks || len(fake.Calls()) != chunks {
		t.Errorf("usage %+v (%v), provider saw %d; want %d requests logged", usage, err, len(fake.Calls()), chunks)
	}
}
