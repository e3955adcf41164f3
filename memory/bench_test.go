package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

func BenchmarkActive(b *testing.B) {
	ctx := context.Background()
	s, _ := storetest.Open(b)
	if _, err := s.Append(ctx, "t", storetest.BenchMessages(200), memory.AppendOptions{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Active(ctx, "t"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s, _ := storetest.Open(b)
	msgs := storetest.BenchMessages(100)
	for i := 0; b.Loop(); i++ {
		if _, err := s.Append(ctx, fmt.Sprint("t", i), msgs, memory.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkThreads1000(b *testing.B) {
	ctx := context.Background()
	s, _ := storetest.Open(b)
	for i := range 1000 {
		if _, err := s.Append(ctx, fmt.Sprintf("thread-%04d", i), storetest.BenchMessages(20), memory.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Threads(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImport imports the recorded conversations (as the files hold them, white space
// after each comma and colon) into a new thread per op, as JSONL, as a JSON array and as
// {"messages": [...]}.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	var lines []string
	for _, f := range corpus.Conversations(b) {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
			lines = append(lines, strings.ReplaceAll(line, `"call_`, fmt.Sprintf(`"%s_call_`, filepath.Base(f))))
		}
	}
	for _, form := range []struct{ name, input string }{
		{"jsonl", strings.Join(lines, "\n")},
		{"array", "[\n" + strings.Join(lines, ",\n") + "\n]"},
		{"object", `{"messages": [` + strings.Join(lines, ", ") + `]}`},
	} {
		b.Run(form.name, func(b *testing.B) {
			s, _ := storetest.Open(b)
			// The encoding is loaded, and the statements prepared, before the measure.
			if _, err := s.Import(ctx, "warm", strings.NewReader(lines[0]), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(form.input)))
			for i := 0; b.Loop(); i++ {
				if _, err := s.Import(ctx, fmt.Sprint("t", i), strings.NewReader(form.input), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkThreadsLength lists 300 threads of 12 messages and 300 threads of 300: the listing
// reads each thread's kept totals, so the two take about the same time (issue 36: within 1.5 x).
func BenchmarkThreadsLength(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{12, 300} {
		b.Run(fmt.Sprintf("300x%d", n), func(b *testing.B) {
			s, _ := storetest.Open(b)
			msgs := storetest.BenchMessages(n)
			for i := range 300 {
				if _, err := s.Append(ctx, fmt.Sprintf("thread-%04d", i), msgs, memory.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := s.Threads(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchThread: a search scoped to one thread, among many threads that hold the same
// words, beside the same search on a database of that thread alone (issue 36: within 2x).
// MEMCTL_BENCH_THREADS sets the number of threads (default 100; the figure is 1,000).
func BenchmarkSearchThread(b *testing.B) {
	ctx := context.Background()
	n := 100
	if v := os.Getenv("MEMCTL_BENCH_THREADS"); v != "" {
		fmt.Sscan(v, &n)
	}
	const per = 1000
	fill := func(s *memory.Store, threads int) {
		for k := range threads {
			var msgs []chat.Message
			for i := range per {
				msgs = append(msgs, chat.TextMessage(chat.RoleUser, fmt.Sprintf("turn %d of thread %d: the deploy failed on port 8080 again, see build log %d", i, k, i*7)))
			}
			if _, err := s.Append(ctx, fmt.Sprintf("t%04d", k), msgs, memory.AppendOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name    string
		threads int
	}{{"alone", 1}, {fmt.Sprintf("among-%d", n), n}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := storetest.Open(b)
			fill(s, c.threads)
			for b.Loop() {
				hits, err := s.Search(ctx, "deploy failed", memory.SearchOptions{Thread: "t0000", Limit: 10})
				if err != nil || len(hits) != 10 {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
		})
	}
}

// BenchmarkHistoryBig reads a thread whose history holds a 20 MB tool result among 200 short
// messages: what a host that reads the thread again pays for decoding what it stored.
func BenchmarkHistoryBig(b *testing.B) {
	ctx := context.Background()
	s, _ := storetest.Open(b)
	msgs := storetest.BenchMessages(200)
	big := chat.TextMessage(chat.RoleUser, strings.Repeat("the build log says nothing new here; ", 20<<20/37))
	msgs = append(msgs[:100:100], append([]chat.Message{big}, msgs[100:]...)...)
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(20 << 20)
	for b.Loop() {
		if _, err := s.History(ctx, "t"); err != nil {
			b.Fatal(err)
		}
	}
}
