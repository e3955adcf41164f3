package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	for _, file := range corpus.Conversations(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			thread := filepath.Base(file)
			res, err := s.Import(ctx, thread, bytes.NewReader(data), memory.AppendOptions{Model: "gpt-4o"})
			if err != nil {
				t.Fatal(err)
			}
			want := corpus.Normalized(t, data)
			if got := res.Appended; got != len(want) {
				t.Fatalf("appended %d, want %d", got, len(want))
			}
			hist, err := s.History(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []chat.Message
			for i, e := range hist {
				if e.Seq != int64(i+1) {
					t.Fatalf("entry %d has seq %d", i, e.Seq)
				}
				msgs = append(msgs, e.Message)
			}
			out, err := json.Marshal(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got := corpus.Normalized(t, out); !reflect.DeepEqual(got, want) {
				t.Fatalf("history differs from the input after a round trip")
			}
		})
	}
}

func TestImportFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	lines := `{"role":"system","content":"be brief"}
{"role":"user","content":"hi","x_custom":{"a":[1,2.50]}}`
	array := `[{"role":"system","content":"be brief"},{"role":"user","content":"hi","x_custom":{"a":[1,2.50]}}]`
	object := "\ufeff" + `{
  "messages": [{"role":"system","content":"be brief"},{"role":"user","content":"hi","x_custom":{"a":[1,2.50]}}]
}`
	for name, in := range map[string]string{"jsonl": lines, "array": array, "object": object} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Import(ctx, name, strings.NewReader(in), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			hist, err := s.History(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 2 {
				t.Fatalf("got %d messages, want 2", len(hist))
			}
			got, _ := json.Marshal(hist[1].Message)
			if want := `{"role":"user","content":"hi","x_custom":{"a":[1,2.50]}}`; string(got) != want {
				t.Fatalf("unknown field not kept as given:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestImportRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []struct {
		name, in   string
		line, idx  int
		field, msg string
	}{
		{"malformed JSONL line", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\n", 2, 1, "", "malformed JSON"},
		{"unknown role", `{"role":"robot","content":"a"}`, 1, 0, "role", `unknown role "robot"`},
		{"missing role", `{"content":"a"}`, 1, 0, "role", "missing"},
		{"orphan tool result", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"r\"}", 2, 1, "tool_call_id", "answers no unanswered tool call"},
		{"call left unanswered", call + "\n" + call, 2, 1, "", `tool call "c1" of the message before it has no result`},
		{"id repeated in one message", `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c1","type":"function","function":{"name":"g","arguments":"{}"}}]}`, 1, 0, "tool_calls[1].id", "repeated"},
		{"invalid UTF-8", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"\xff\xfe\"}", 2, 1, "", "invalid UTF-8"},
		{"value holds no messages", `{"model":"gpt-4o"}`, 1, 0, "role", "missing"},
		{"number", `42`, 1, 0, "", "not a message"},
		{"empty array", `[]`, 0, 0, "", "no message"},
		{"empty file", "", 0, 0, "", "no message"},
		{"blank lines only", "\n\n  \n", 0, 0, "", "no message"},
		{"content of wrong type", `{"role":"user","content":42}`, 1, 0, "", "content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			// A valid history first: the bad import must leave it exactly as it was.
			if _, err := s.Import(ctx, "t", strings.NewReader(`{"role":"user","content":"first"}`), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := s.Import(ctx, "t", strings.NewReader(tc.in), memory.AppendOptions{})
			var ie *memory.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			if ie.Line != tc.line || ie.Index != tc.idx || ie.Field != tc.field {
				t.Errorf("got line %d index %d field %q, want %d %d %q (%v)", ie.Line, ie.Index, ie.Field, tc.line, tc.idx, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			hist, err := s.History(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 1 {
				t.Fatalf("history has %d messages after a rejected import, want 1", len(hist))
			}
		})
	}
}

func TestAppendAcrossBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	call := chat.Message{Role: chat.RoleAssistant, Content: json.RawMessage("null"),
		ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: "{}"}}}}
	result := chat.TextMessage(chat.RoleTool, "done")
	result.ToolCallID = "c1"
	steps := []struct {
		msg chat.Message
		ok  bool
	}{
		{call, true},
		{call, false},  // c1 still unanswered
		{result, true}, // answers c1 in a later batch
		{result, false},
		{call, true}, // recorded agents reuse an id once it was answered
	}
	for i, st := range steps {
		_, err := s.Append(ctx, "t", []chat.Message{st.msg}, memory.AppendOptions{})
		if (err == nil) != st.ok {
			t.Fatalf("step %d: err = %v, want ok=%v", i, err, st.ok)
		}
	}
	th, err := s.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.Messages != 3 {
		t.Fatalf("thread has %d messages, want 3", th.Messages)
	}
}

func TestTokensCountedAtAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are terse."), chat.TextMessage("user", "hello world")}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4"}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tokencount.NewCounter(tokencount.EncodingCL100k)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Tokens, c.CountMessages(msgs); got != want {
		t.Fatalf("active tokens %d, want %d", got, want)
	}
	if a.Thread.Encoding != tokencount.EncodingCL100k {
		t.Fatalf("encoding %q, want cl100k_base for gpt-4", a.Thread.Encoding)
	}
	th, err := s.Threads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(th) != 1 || th[0].ActiveTokens != a.Tokens || th[0].ActiveMessages != 2 {
		t.Fatalf("threads = %+v, want one with %d active tokens", th, a.Tokens)
	}
}

func TestUnknownModelWarns(t *testing.T) {
	t.Parallel()
	s, _ := storetest.Open(t)
	res, err := s.Append(context.Background(), "t", []chat.Message{chat.TextMessage("user", "hi")}, memory.AppendOptions{Model: "llama3.2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Warning, "llama3.2") {
		t.Fatalf("warning %q does not name the model", res.Warning)
	}
	res, err = s.Append(context.Background(), "t", []chat.Message{chat.TextMessage("user", "again")}, memory.AppendOptions{Model: "llama3.2"})
	if err != nil || res.Warning != "" {
		t.Fatalf("a second append warned again (%q, %v)", res.Warning, err)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	data, err := os.ReadFile(corpus.Airline)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, "air", bytes.NewReader(data), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, "get_reservation_details", memory.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Fatal("no hit for a tool name in the conversation")
	}
	for _, q := range []string{"gpt-4o", "C++", `"quoted"`, "a AND", "OR", "NEAR(", "*", `"`, "col:umn", "-x", "^start", "(", "🙂", ""} {
		if _, err := s.Search(ctx, q, memory.SearchOptions{}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
	hits, err = s.Search(ctx, "nosuchwordanywhere", memory.SearchOptions{})
	if err != nil || len(hits) != 0 {
		t.Fatalf("search for an absent word: %v, %v", hits, err)
	}
}

// TestNewOverAnOpenHandle: New builds a store over a database its caller opened, with the
// options given (here the model of new threads and the clock), and its Close leaves the handle
// to that caller; Open's store closes the database it opened.
func TestNewOverAnOpenHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, path := storetest.Open(t)
	h, err := db.OpenHandle(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := memory.New(ctx, h, memory.Options{DefaultModel: "gpt-4", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", "hi")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, "t")
	if err != nil || th.Model != "gpt-4" || !th.CreatedAt.Equal(t0) || !s.Now().Equal(t0) {
		t.Fatalf("thread %+v (%v): want model gpt-4 created at %v", th, err, t0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Q().ListThreads(ctx, ""); err != nil {
		t.Fatalf("the handle after the store's Close: %v", err)
	}
	other, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if _, err := other.DB().Q().ListThreads(ctx, ""); err == nil {
		t.Fatal("Open's store left its database open after Close")
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	t.Parallel()
	testdb.SQLiteOnly(t, "a file's mode")
	_, path := storetest.Open(t)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Fatalf("database mode %o, want 600", got)
	}
}

func TestDeleteThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", "secretword")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("thread still there: %v", err)
	}
	if hits, err := s.Search(ctx, "secretword", memory.SearchOptions{}); err != nil || len(hits) != 0 {
		t.Fatalf("deleted text still found: %v %v", hits, err)
	}
	if err := s.DeleteThread(ctx, "t"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("second delete: %v, want ErrThreadNotFound", err)
	}
}

// TestSearchAfterBatchedIndexing: an import long enough to be indexed in several batches (256
// messages each on SQLite) finds its first, middle and last messages, and none twice.
func TestSearchAfterBatchedIndexing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	const n = 600
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"role\":\"user\",\"content\":\"note number%d with some padding text\"}\n", i)
	}
	if _, err := s.Import(ctx, "t", strings.NewReader(in.String()), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 7, 255, 256, 511, 512, n - 1} {
		hits, err := s.Search(ctx, fmt.Sprintf("number%d", i), memory.SearchOptions{})
		if err != nil || len(hits) != 1 || hits[0].Seq != int64(i+1) {
			t.Fatalf("search number%d: %+v, %v", i, hits, err)
		}
	}
	hits, _ := s.Search(ctx, "padding", memory.SearchOptions{Limit: memory.MaxSearchLimit})
	if len(hits) != min(n, memory.MaxSearchLimit) {
		t.Fatalf("%d hits for a word of every message, want %d", len(hits), min(n, memory.MaxSearchLimit))
	}
}

// TestSearchQueryWithNUL: FTS5 reads a query string up to its first NUL; a word holding one must
// not make the query malformed.
func TestSearchQueryWithNUL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := memory.Open(ctx, testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", "alpha\x00beta gamma")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"alpha\x00beta", "a\x00\"", "\x00gamma\x00"} {
		hits, err := s.Search(ctx, q, memory.SearchOptions{})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		if q != "a\x00\"" && len(hits) != 1 {
			t.Fatalf("search %q: %d hits, want 1", q, len(hits))
		}
	}
}
