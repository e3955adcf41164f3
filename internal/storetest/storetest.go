// Package storetest holds the helpers that the tests of the store and of the packages built on
// it share: a new store per test on the backend of the run, imports of the recorded
// conversations (internal/corpus has the conversations themselves), long threads, cascades of
// fakes or of the offline summarizer, the pin checks, and the stores and direct reads of the
// PostgreSQL fault tests. It is a package, not _test files, because more than one test package
// needs it; the tests call it by its name (a helper that one test package alone uses stays in
// that package's helpers_test.go).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Open opens a new store on the backend of the run (testdb): its name is a file path or a
// PostgreSQL URL, which Open takes again.
func Open(t testing.TB) (*memory.Store, string) {
	t.Helper()
	return OpenWith(t, memory.Options{})
}

// OpenWith is Open with the store's options.
func OpenWith(t testing.TB, opt memory.Options) (*memory.Store, string) {
	t.Helper()
	path := freshDB.Name(t, "memory.db")
	s, err := memory.Open(context.Background(), path, memory.OpenOptions{Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// freshDB makes the new databases of Open: copies of one a store made, on SQLite.
var freshDB = testdb.NewTemplate(func(path string) error {
	s, err := memory.Open(context.Background(), path)
	if err != nil {
		return err
	}
	return s.Close()
})

// Import imports a testdata conversation into thread and returns the file's bytes.
func Import(t testing.TB, s *memory.Store, thread, file string) []byte {
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

// ExtractiveCascade is the built-in offline cascade on the store's database and clock.
func ExtractiveCascade(t testing.TB, s *memory.Store) *cascade.Cascade {
	t.Helper()
	return cascade.NewWith(s.DB(), cascade.Options{Now: s.Now}, ExtractiveEntry(t, s))
}

// ExtractiveEntry is the rung of ExtractiveCascade: the offline summarizer, counting with the
// store's o200k_base counter.
func ExtractiveEntry(t testing.TB, s *memory.Store) cascade.Entry {
	t.Helper()
	c, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	return cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive",
		Provider: extractive.Summarizer{Count: c.CountText}, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
}

// FailingCascade is a cascade on the store's database and clock whose every provider fails.
func FailingCascade(s *memory.Store) *cascade.Cascade {
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{}, errors.New("connection reset")
	}}
	return cascade.NewWith(s.DB(), cascade.Options{Now: s.Now},
		cascade.Entry{Name: "a", Type: "fake", Model: "m1", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute},
		cascade.Entry{Name: "b", Type: "fake", Model: "m2", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
}

// LongThread appends n user/assistant pairs of about size bytes each after a system prompt.
func LongThread(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	msgs := []chat.Message{chat.TextMessage("system", "You are a careful assistant.")}
	for i := range n {
		msgs = append(msgs,
			chat.TextMessage("user", fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum dolor ", size/18))),
			chat.TextMessage("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat("sit amet consectetur ", size/21))))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// LongThread2 appends more pairs without a system prompt.
func LongThread2(t testing.TB, s *memory.Store, thread string, n, size int) {
	t.Helper()
	var msgs []chat.Message
	for i := range n {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("late question %d: %s", i, strings.Repeat("tempor incididunt ", size/18))),
			chat.TextMessage("assistant", fmt.Sprintf("late answer %d: %s", i, strings.Repeat("ut labore et dolore ", size/20))))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// BenchMessages is a system prompt and n short user and assistant messages about orders and
// flights, for benchmarks.
func BenchMessages(n int) []chat.Message {
	msgs := []chat.Message{chat.TextMessage("system", "You are a support agent.")}
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, chat.TextMessage(role, fmt.Sprintf("message %d about order W%06d and flight HAT%03d", i, i, i%300)))
	}
	return msgs
}

// MustJSON is s as a JSON string, for a message's content.
func MustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
