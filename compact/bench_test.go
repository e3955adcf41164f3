package compact_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// instant is a summarizer that answers at once: what is measured is the compactor's own work.
type instant struct{}

func (instant) Run(ctx context.Context, id int64, task llm.Task) (llm.Result, error) {
	text, err := task(ctx, llm.Target{Name: "instant"}, instantCompleter{})
	return llm.Result{Text: text, Provider: "instant", Model: "instant"}, err
}

type instantCompleter struct{}

func (instantCompleter) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Text: "The user asked about many orders; all were answered.", FinishReason: "stop"}, nil
}

func BenchmarkCompact(b *testing.B) {
	benchCompaction(b, "compact", func(b *testing.B, c *compact.Compactor, thread string, tokens int) {
		c.Settings.TokenLimit = tokens / 2
	})
}

// BenchmarkRecompact is a compaction that folds a summary in: it reads the stored ledger of the
// first one (the facts of n messages) and adds the facts of the messages summarized since.
func BenchmarkRecompact(b *testing.B) {
	benchCompaction(b, "recompact", func(b *testing.B, c *compact.Compactor, thread string, tokens int) {
		c.Settings.TokenLimit = tokens / 2
		if _, err := c.Compact(context.Background(), thread, compact.Options{Force: true}); err != nil {
			b.Fatal(err)
		}
		c.Settings.TokenLimit = tokens / 4
	})
}

// benchCompaction measures one forced compaction (labeled phase) of a new thread of n short
// messages, n = 1,000 and 10,000, after setup (not measured) set the compactor's limit and
// did what comes before it.
func benchCompaction(b *testing.B, phase string, setup func(b *testing.B, c *compact.Compactor, thread string, tokens int)) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			s, _ := storetest.Open(b)
			msgs := storetest.BenchMessages(n)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				thread := fmt.Sprint("t", i)
				if _, err := s.Append(ctx, thread, msgs, memory.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
				// Indexed for search and checkpointed now, not by the store's indexer and
				// checkpointer while the compaction runs.
				if err := s.DB().IndexPending(ctx); err != nil {
					b.Fatal(err)
				}
				if err := s.DB().Checkpoint(ctx); err != nil {
					b.Fatal(err)
				}
				a, _ := s.Active(ctx, thread)
				c := compact.New(s, instant{}, compact.Settings{})
				setup(b, c, thread, a.Tokens)
				b.StartTimer()
				if rep, err := labeled(ctx, phase, c, thread); err != nil || rep.Status != memory.StatusApplied {
					b.Fatalf("%s: %s, %v", phase, rep.Status, err)
				}
			}
		})
	}
}

// labeled is the measured compaction, run under the profiler label phase=name: a CPU
// profile of the benchmarks shows it apart from the appends that set it up
// (go tool pprof -tagfocus phase=recompact).
func labeled(ctx context.Context, name string, c *compact.Compactor, thread string) (rep memory.Report, err error) {
	pprof.Do(ctx, pprof.Labels("phase", name), func(ctx context.Context) {
		rep, err = c.Compact(ctx, thread, compact.Options{Force: true})
	})
	return rep, err
}
