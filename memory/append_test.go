package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestImportRejectsMalformedJSON: data after the messages, an unclosed object, and JSONL lines
// padded with characters JSON does not count as white space are malformed input.
func TestImportRejectsMalformedJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`[{"role":"user","content":"x"}] trailing`,
		`[{"role":"user","content":"x"}][]`,
		`{"messages": [{"role":"user","content":"x"}]`,
		`{"messages": [{"role":"user","content":"x"}]} {"role":"user","content":"y"}`,
		`{"messages": [{"role":"user","content":"x"}], "tools": [}`,
		`{"messages": [{"role":"user","content":"x"}], "messages": []}`,
		"{\"role\":\"user\",\"content\":\"x\"}\n\u00a0{\"role\":\"user\",\"content\":\"y\"}",
		"{\"role\":\"user\",\"content\":\"x\"}\u0085\n",
	} {
		s, err := memory.Open(context.Background(), testdb.Name(t, "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Import(context.Background(), "t", strings.NewReader(in), memory.AppendOptions{})
		var ie *memory.InputError
		if !errors.As(err, &ie) {
			t.Errorf("import %q: error %v, want an *InputError", in, err)
		}
		if _, herr := s.History(context.Background(), "t"); !errors.Is(herr, memory.ErrThreadNotFound) {
			t.Errorf("import %q: the thread exists after the error %v", in, err)
		}
		s.Close()
	}
	// Keys after "messages" are ignored when well-formed, as before.
	s, err := memory.Open(context.Background(), testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := `{"messages": [{"role":"user","content":"x"}], "tools": [{"type":"function"}]}` + "\n"
	if res, err := s.Import(context.Background(), "t", strings.NewReader(in), memory.AppendOptions{}); err != nil || res.Appended != 1 {
		t.Fatalf("import %q: %+v, %v", in, res, err)
	}
}
