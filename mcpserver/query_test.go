package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestSearchQueryBound: a query of many words is refused at once, saying so, rather than
// keeping the database busy for minutes (FTS5 took 23 s for 1,000 words "a", longer than
// the test's timeout for a 1 MB query of them); a word repeated counts once.
func TestSearchQueryBound(t *testing.T) {
	cs, s := setup(t, mcpserver.Options{Thread: "t"})
	ctx := context.Background()
	long := strings.Repeat("a b c d e f g h i j k l m n o p q r s t u v w x y z ", 40<<10) // 1 MiB, 26 distinct words
	for _, q := range []string{long, "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"} {
		if _, err := s.Search(ctx, q, memory.SearchOptions{Thread: "t"}); memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(fmt.Sprint(err), "query too long") {
			t.Fatalf("a query of %d bytes: %v, want ErrQueryTooLong", len(q), err)
		}
	}
	if e := call(t, cs, "memory_search", map[string]any{"query": long}, &mcpserver.SearchOutput{}); !strings.Contains(e, "at most 16") {
		t.Fatalf("memory_search of a 1 MiB query: %q", e)
	}
	// The same word again and again is one word: it is searched once.
	hits, err := s.Search(ctx, strings.Repeat("LQ940Q lq940q ", 50000), memory.SearchOptions{Thread: "t"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("a query of one word repeated: %v %v", hits, err)
	}
	// A query with no word to search for finds nothing, as memctl search and the API answer it.
	var none mcpserver.SearchOutput
	if e := call(t, cs, "memory_search", map[string]any{"query": " * - "}, &none); e != "" || len(none.Hits) != 0 {
		t.Fatalf("memory_search of no word: %q %v", e, none.Hits)
	}
}
