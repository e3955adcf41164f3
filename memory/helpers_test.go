package memory_test

// Helpers shared by the tests of package memory_test: stores, the recorded conversations of
// testdata, and cascades of fakes or of the offline summarizer.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// airline is the recorded conversation most tests compact.
const airline = "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"

// openStore opens a new store on the backend of the run (testdb): its name is a file path or a
// PostgreSQL URL, which Open takes again.
func openStore(t testing.TB) (*memory.Store, string) {
	t.Helper()
	path := freshDB.Name(t, "memory.db")
	s, err := memory.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// freshDB makes the new databases of openStore: copies of one a store made, on SQLite.
var freshDB = testdb.NewTemplate(func(path string) error {
	s, err := memory.Open(context.Background(), path)
	if err != nil {
		return err
	}
	return s.Close()
})

// counter is the built-in counter of a built-in encoding.
func counter(t testing.TB, encoding string) *memory.BPECounter {
	t.Helper()
	c, err := memory.NewTokenCounter(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// conversations returns the recorded conversations of testdata.
func conversations(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata conversations: %v", err)
	}
	return files
}

// normalized parses JSON values (one per line, or an array) into generic values, so two
// encodings of the same data compare equal.
func normalized(t testing.TB, data []byte) []any {
	t.Helper()
	var out []any
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// recordedMessages returns every message of the recorded conversations of testdata.
func recordedMessages(t testing.TB) [][]memory.Message {
	t.Helper()
	var all [][]memory.Message
	for _, f := range conversations(t) {
		all = append(all, readMessagesFile(t, f))
	}
	return all
}

func readMessagesFile(t testing.TB, path string) []memory.Message {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ms []memory.Message
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m memory.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// importFile imports a testdata conversation into thread and returns the file's bytes.
func importFile(t testing.TB, s *memory.Store, thread, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), thread, bytes.NewReader(data), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	return data
}

// extractiveCascade is the built-in offline cascade on the store's database.
func extractiveCascade(t testing.TB, s *memory.Store) *cascade.Cascade {
	t.Helper()
	c, err := s.Counter(memory.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	return cascade.New(s.DB(), cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive",
		Provider: extractive.Summarizer{Count: c.CountText}, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
}

// failingCascade is a cascade whose every provider fails.
func failingCascade(s *memory.Store) *cascade.Cascade {
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{}, errors.New("connection reset")
	}}
	return cascade.New(s.DB(),
		cascade.Entry{Name: "a", Type: "fake", Model: "m1", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute},
		cascade.Entry{Name: "b", Type: "fake", Model: "m2", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
}

func fakeEntry(name string, p cascade.Provider, window int) cascade.Entry {
	return cascade.Entry{Name: name, Type: "fake", Model: name + "-model", Provider: p, ContextWindow: window,
		MaxOutputTokens: 256, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
}

// longThread appends n user/assistant pairs of about size bytes each after a system prompt.
func longThread(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	msgs := []memory.Message{memory.TextMessage("system", "You are a careful assistant.")}
	for i := range n {
		msgs = append(msgs,
			memory.TextMessage("user", fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum dolor ", size/18))),
			memory.TextMessage("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat("sit amet consectetur ", size/21))))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// longThread2 appends more pairs without a system prompt.
func longThread2(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	var msgs []memory.Message
	for i := range n {
		msgs = append(msgs, memory.TextMessage("user", fmt.Sprintf("late question %d: %s", i, strings.Repeat("tempor incididunt ", size/18))),
			memory.TextMessage("assistant", fmt.Sprintf("late answer %d: %s", i, strings.Repeat("ut labore et dolore ", size/20))))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}
