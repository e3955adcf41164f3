package memory_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestNulAndBadUTF8 feeds what PostgreSQL's text cannot hold (NUL characters, bytes that are
// not UTF-8) through every path that stores text, on both backends: message content is kept
// exactly in the stored JSON; identifiers holding it are refused naming the field; a summary and
// a provider's error holding it are stored with U+FFFD in its place.
func TestNulAndBadUTF8(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	input := `{"role":"system","content":"You are an agent."}` + "\n" +
		`{"role":"user","content":"binary a\u0000b output"}` + "\n" +
		`{"role":"assistant","content":"seen \u0000 twice \u0000"}` + "\n"
	if _, err := s.Import(ctx, "t", strings.NewReader(input), memory.AppendOptions{}); err != nil {
		t.Fatalf("import of content holding NUL: %v", err)
	}
	hist, err := s.History(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, e := range hist {
		b, err := e.Message.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if out.String() != input {
		t.Fatalf("history = %q; want the input exactly", out.String())
	}
	if hits, err := s.Search(ctx, "binary", memory.SearchOptions{}); err != nil || len(hits) != 1 {
		t.Errorf("search beside a NUL: %v, %v", hits, err)
	}

	for _, tc := range []struct{ line, field string }{
		{`{"role":"user","name":"a\u0000b","content":"x"}`, "name"},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"c\u00001","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "tool_calls[0].id"},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f\u0000","arguments":"{}"}}]}`, "tool_calls[0].function.name"},
	} {
		_, err := s.Import(ctx, "t", strings.NewReader(tc.line), memory.AppendOptions{})
		var ie *memory.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Msg, "NUL") {
			t.Errorf("%s: err %v, want an InputError on %s naming NUL", tc.line, err, tc.field)
		}
	}
	for _, id := range []string{"t\x00x", "t\xffx"} {
		if _, err := s.Append(ctx, id, []chat.Message{chat.TextMessage(chat.RoleUser, "hi")}, memory.AppendOptions{}); err == nil || !strings.Contains(err.Error(), "thread id") {
			t.Errorf("thread id %q: err %v, want a refusal naming the thread id", id, err)
		}
	}
	if _, err := s.Append(ctx, "m", []chat.Message{chat.TextMessage(chat.RoleUser, "hi")}, memory.AppendOptions{Model: "gpt\x00"}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("model with NUL: %v", err)
	}

	// A provider that fails with NUL in its error, then one that answers with NUL and a byte
	// that is not UTF-8 in the summary.
	storetest.LongThread(t, s, "long", 30, 400)
	bad := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, errors.New("upstream said \x00\xff")
	}}
	odd := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "## Summary\nthe user asked \x00 questions \xff about lorem ipsum"}, nil
	}}
	casc := cascade.New(s.DB(),
		cascade.Entry{Name: "bad", Provider: bad, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute},
		cascade.Entry{Name: "odd", Provider: odd, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	a, err := s.Active(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens / 2})
	rep, err := c.Compact(ctx, "long", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	full, err := s.Report(ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.Summary == nil || strings.ContainsRune(*full.Summary, 0) || !strings.Contains(*full.Summary, "asked \uFFFD questions \uFFFD about") {
		t.Errorf("summary %v, want U+FFFD for the NUL and the bad byte", full.Summary)
	}
	atts, err := s.Attempts(ctx, "bad", 0)
	if err != nil || len(atts) != 1 || !strings.Contains(atts[0].Error, "upstream said") {
		t.Errorf("attempts of the failing provider: %+v, %v", atts, err)
	}
}
