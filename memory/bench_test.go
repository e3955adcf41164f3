package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
