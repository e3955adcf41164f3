package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestEndsWith: true only for the thread's last messages, same order, in any import form.
func TestEndsWith(t *testing.T) {
	t.Parallel()
	s, _ := storetest.Open(t)
	ctx := context.Background()
	lines := []string{`{"role":"user","content":"a"}`, `{"role":"assistant","content":"b"}`, `{"role":"user","content":[{"type":"text","text":"c"}]}`}
	if _, err := s.Import(ctx, "t", strings.NewReader(strings.Join(lines, "\n")), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{
		strings.Join(lines, "\n"):                              true,
		"[" + strings.Join(lines, ",") + "]":                   true,
		`{"messages": [` + strings.Join(lines[1:], ",") + `]}`: true,
		lines[2]:                   true,
		lines[0]:                   false, // not at the end
		lines[2] + "\n" + lines[1]: false, // order
		lines[0] + "\n" + strings.Join(lines, "\n"): false, // longer than the thread
		`{"role":"user","content":"c"}`:             false, // other content form
	} {
		got, err := s.EndsWith(ctx, "t", strings.NewReader(in))
		if err != nil || got != want {
			t.Errorf("EndsWith(%s) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := s.EndsWith(ctx, "none", strings.NewReader(lines[0])); got || err != nil {
		t.Errorf("unknown thread: %v %v", got, err)
	}
	if _, err := s.EndsWith(ctx, "t", strings.NewReader(`{"role":`)); err == nil {
		t.Error("bad input: no error")
	}
}

// TestSearchPrefixAndMarks: a word ending in * is a prefix query; Marks locate each match in
// the snippet, brackets of the stored text aside.
func TestSearchPrefixAndMarks(t *testing.T) {
	t.Parallel()
	s, _ := storetest.Open(t)
	ctx := context.Background()
	if _, err := s.Import(ctx, "t", strings.NewReader(`{"role":"user","content":"[a] code OBUT9V and obutane]"}`), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, "OBUT*", memory.SearchOptions{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("OBUT*: %v %v", hits, err)
	}
	h := hits[0]
	// PostgreSQL's headline starts and ends at a word: the brackets at the edges are SQLite's.
	want := "[a] code [OBUT9V] and [obutane]]"
	if testdb.Backend() == testdb.Postgres {
		want = "code [OBUT9V] and [obutane]"
	}
	if h.Snippet != want {
		t.Errorf("snippet %q, want %q", h.Snippet, want)
	}
	var marked []string
	for _, m := range h.Marks {
		marked = append(marked, h.Snippet[m[0]:m[1]])
	}
	if strings.Join(marked, ",") != "OBUT9V,obutane" {
		t.Errorf("marks %v: %q", h.Marks, marked)
	}
	if hits, _ := s.Search(ctx, "OBUT", memory.SearchOptions{}); len(hits) != 0 {
		t.Errorf("OBUT without *: %d hits", len(hits))
	}
	// A quote is text, not syntax: "OB* is the prefix OB (the tokenizer drops the quote).
	for q, want := range map[string]int{`"OB*`: 1, `OB*"`: 0, `ZZ* OR OB*`: 0, `*`: 0} {
		if hits, err := s.Search(ctx, q, memory.SearchOptions{}); err != nil || len(hits) != want {
			t.Errorf("%s: %d hits (%v), want %d", q, len(hits), err, want)
		}
	}
}
