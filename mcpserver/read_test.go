package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// serveThread appends msgs to thread "t" of a fresh store and returns a client session of a
// server with opt (its Compactor set here, with no cascade: reads only).
func serveThread(t *testing.T, opt mcpserver.Options, msgs ...chat.Message) (*mcp.ClientSession, *memory.Store) {
	t.Helper()
	ctx := context.Background()
	s, err := memory.Open(ctx, freshDB.Name(t, "read.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	opt.Compactor = compact.New(s, nil, compact.Settings{})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(opt).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, s
}

// lines returns about n bytes of numbered lines of text, with accents and an emoji (characters
// of several bytes, which a cut must not split).
func lines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d: the café's fox 🦊 %d jumps over the lazy dog\n", i, i*7)
	}
	return b.String()
}

// TestReadCutsLargeMessage: a message over memory_read's bound comes alone and cut, saying its
// seq, its whole size in tokens and bytes, and where to read on; the answer stays within the
// bound, and the read allocates less than 5 times the message (its text read once from the
// store, the redactor's scan of it in context). Before, a 4 MB message with a bound of 1,000
// tokens came back whole: an answer of 8.6 MB (its text twice, as structured content and as
// text) and 340 to 380 MB allocated (81 to 90 times the message); now 6.3 KB and 10 MB (2.4
// times) on SQLite, 18.5 MB (4.4 times) on PostgreSQL, where the redaction in context (the
// redactor's candidate offsets over the whole text) adds 2 times the message to pgx's copy.
func TestReadCutsLargeMessage(t *testing.T) {
	const bound = 1000
	big := lines(4 << 20)
	cs, s := serveThread(t, mcpserver.Options{Thread: "t", ReadTokens: bound},
		chat.TextMessage("user", "read the log"), chat.TextMessage("user", big), chat.TextMessage("assistant", "done"))
	es, err := s.Messages(context.Background(), "t", 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	stored := es[0].Tokens

	// Before it, the range stops: the large message is read alone.
	var out mcpserver.ReadOutput
	if e := call(t, cs, "memory_read", map[string]any{"from_seq": 1, "to_seq": 3}, &out); e != "" {
		t.Fatal(e)
	}
	if len(out.Messages) != 1 || out.Messages[0].Cut != nil || !out.Truncated || out.NextSeq != 2 {
		t.Fatalf("read 1..3: %+v", out)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_read", Arguments: map[string]any{"from_seq": 2, "to_seq": 3}})
	runtime.ReadMemStats(&after)
	if err != nil || res.IsError {
		t.Fatalf("read 2..3: %v %+v", err, res)
	}
	answer, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a message of %d bytes, %d tokens, read with a bound of %d tokens: an answer of %d bytes, %d bytes allocated (%.1f times the message)",
		len(big), stored, bound, len(answer), alloc, float64(alloc)/float64(len(big)))
	if len(answer) > 4*bound*4 {
		t.Errorf("answer of %d bytes, want under 4 times the bound in bytes (%d)", len(answer), 4*bound*4)
	}
	if alloc > 5*uint64(len(big)) {
		t.Errorf("%d bytes allocated for the read, want under 5 times the message (%d)", alloc, 5*len(big))
	}
	b, _ := json.Marshal(res.StructuredContent)
	out = mcpserver.ReadOutput{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || !out.Truncated || out.NextSeq != 2 {
		t.Fatalf("read 2..3: %d messages, truncated %v, next %d; want message 2 alone, read on at 2", len(out.Messages), out.Truncated, out.NextSeq)
	}
	m := out.Messages[0]
	c := m.Cut
	if m.Seq != 2 || c == nil || c.Tokens != stored || c.Bytes != int64(len(big)) || c.Offset != 0 ||
		c.NextOffset != int64(len(m.Content)) || m.Tokens > bound || m.Tokens == 0 || !strings.HasPrefix(big, m.Content) ||
		!strings.Contains(c.Note, fmt.Sprintf("read on with from_seq 2, offset %d", c.NextOffset)) {
		t.Fatalf("message 2: seq %d, %d tokens, %d bytes shown, cut %+v; want its start within %d tokens, its size %d tokens and %d bytes",
			m.Seq, m.Tokens, len(m.Content), c, bound, stored, len(big))
	}

	// The next part starts where the first ended.
	out = mcpserver.ReadOutput{}
	if e := call(t, cs, "memory_read", map[string]any{"from_seq": 2, "to_seq": 3, "offset": c.NextOffset}, &out); e != "" {
		t.Fatal(e)
	}
	if next := out.Messages[0]; next.Cut == nil || next.Cut.Offset != c.NextOffset || !strings.HasPrefix(big[c.NextOffset:], next.Content) || next.Content == "" {
		t.Fatalf("the second part: cut %+v, %d bytes", next.Cut, len(next.Content))
	}
}

// TestReadPartsWhole: read part by part from the offsets memory_read gives, a large message
// (its content, then its tool calls' arguments) comes back whole, each part within the bound,
// no character split, and its secret redacted as a whole (never a piece of it in a part); after
// its last part the read goes on with the next message. Bad offsets are errors saying why.
func TestReadPartsWhole(t *testing.T) {
	const bound = 500
	const secret = "sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sA"
	text := lines(30000) + "the key is " + secret + " " + lines(20000)
	args := `{"path":"notes.txt","text":` + string(must(json.Marshal(lines(12000)))) + `}`
	call1 := chat.ToolCall{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "write", Arguments: args}}
	asst := chat.TextMessage("assistant", text)
	asst.ToolCalls = []chat.ToolCall{call1}
	cs, _ := serveThread(t, mcpserver.Options{Thread: "t", ReadTokens: bound},
		chat.TextMessage("user", "write the notes"), asst, chat.Message{Role: "tool", ToolCallID: "call_1", Content: json.RawMessage(`"written"`)})

	var content, arguments strings.Builder
	offset, parts := int64(0), 0
	for {
		var out mcpserver.ReadOutput
		if e := call(t, cs, "memory_read", map[string]any{"from_seq": 2, "to_seq": 3, "offset": offset}, &out); e != "" {
			t.Fatal(e)
		}
		parts++
		m := out.Messages[0]
		if len(out.Messages) != 1 || m.Cut == nil || m.Cut.Offset != offset || m.Tokens > bound || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_1" {
			t.Fatalf("part %d at %d: %d messages, cut %+v, %d tokens", parts, offset, len(out.Messages), m.Cut, m.Tokens)
		}
		if strings.ContainsRune(m.Content, '\uFFFD') || strings.ContainsRune(m.ToolCalls[0].Arguments, '\uFFFD') {
			t.Fatalf("part %d splits a character", parts)
		}
		content.WriteString(m.Content)
		arguments.WriteString(m.ToolCalls[0].Arguments)
		if m.Cut.NextOffset == 0 {
			if !out.Truncated || out.NextSeq != 3 {
				t.Fatalf("after the last part: truncated %v, next %d; want 3", out.Truncated, out.NextSeq)
			}
			break
		}
		if !out.Truncated || out.NextSeq != 2 || m.Cut.NextOffset <= offset {
			t.Fatalf("part %d: truncated %v, next %d, next offset %d after %d", parts, out.Truncated, out.NextSeq, m.Cut.NextOffset, offset)
		}
		offset = m.Cut.NextOffset
	}
	if strings.Contains(content.String(), "sk-proj-Zq8") || !strings.Contains(content.String(), "[REDACTED") {
		t.Fatalf("the secret is not redacted whole")
	}
	if got := strings.Replace(content.String(), "[REDACTED:openai_key]", secret, 1); got != text {
		t.Fatalf("the content read in %d parts is not the message's (%d bytes, want %d)", parts, len(got), len(text))
	}
	if arguments.String() != args {
		t.Fatalf("the arguments read in %d parts are not the call's (%d bytes, want %d)", parts, arguments.Len(), len(args))
	}
	t.Logf("%d bytes of content and %d of arguments read in %d parts", len(text), len(args), parts)

	for _, c := range []struct {
		offset int64
		want   string
	}{
		{-1, "offset -1: want 0 or more"},
		{int64(content.Len() + len(args)), "message 2 has"},
	} {
		var out mcpserver.ReadOutput
		if e := call(t, cs, "memory_read", map[string]any{"from_seq": 2, "to_seq": 3, "offset": c.offset}, &out); !strings.Contains(e, c.want) {
			t.Errorf("offset %d: error %q, want it to say %q", c.offset, e, c.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
