package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestSearchSnippetRedacts: memory_search's snippet of a message that holds a secret never
// shows the secret, whatever word of it or near it the query matches. The brackets around a
// match, or the snippet's edges, cut a secret so that the redactor no longer recognises it in
// the snippet alone ("[ghp]_R4nd...", "sk-[proj]-Zq8v..."), although memory_read redacts the
// same message.
func TestSearchSnippetRedacts(t *testing.T) {
	const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	// mayMiss: PostgreSQL's parser does not take that piece of the token for a word.
	cases := []struct {
		name, text, query, secret string
		mayMiss                   bool
	}{
		{"github token, its prefix matched", "token ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf1234 here", "ghp", "R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf1234", false},
		{"openai key, a middle word matched", "use sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sAxx for it", "proj", "Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sA", false},
		{"openai key, its first word matched", "use sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sAxx for it", "sk", "Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sA", false},
		{"stripe key", "key sk_live_51HqLyjWDarjtT1zdp7dcXYZabcdefGHIJ ok", "live", "51HqLyjWDarjtT1zdp7dcXYZ", false},
		{"slack token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb", "AbCdEfGhIjKlMnOpQrStUvWx", false},
		{"password value matched", "the password=Hunter2IsNotAGoodPassword123 ok", "Hunter2IsNotAGoodPassword123", "Hunter2IsNotAGoodPassword123", false},
		{"jwt signature matched", "bearer " + jwt, "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", true},
		{"anthropic key", "sk-ant-api03-" + strings.Repeat("Ab3dE", 18) + "AA", "ant", "Ab3dEAb3dEAb3dE", false},
		{"a key the snippet's window cuts", "key sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sAxx " + strings.Repeat("word ", 14) + "needle " + strings.Repeat("tail ", 20), "needle", "Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sA", false},
	}
	cs, s := setup(t, mcpserver.Options{Thread: "t"})
	ctx := context.Background()
	for i, c := range cases {
		if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", c.text)}, memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		seq := int64(63 + i)
		var read mcpserver.ReadOutput
		if e := call(t, cs, "memory_read", map[string]any{"from_seq": seq, "to_seq": seq}, &read); e != "" {
			t.Fatal(e)
		}
		if strings.Contains(read.Messages[0].Content, c.secret) {
			t.Fatalf("%s: memory_read shows the secret: %q", c.name, read.Messages[0].Content)
		}
		var found mcpserver.SearchOutput
		if e := call(t, cs, "memory_search", map[string]any{"query": c.query, "limit": 100}, &found); e != "" {
			t.Fatal(e)
		}
		hit := false
		for _, h := range found.Hits {
			if h.Seq != seq {
				continue
			}
			hit = true
			if plain := strings.NewReplacer("[", "", "]", "").Replace(h.Snippet); strings.Contains(plain, c.secret) {
				t.Errorf("%s: query %q: the snippet shows the secret: %q", c.name, c.query, h.Snippet)
			}
		}
		if !hit && !c.mayMiss {
			t.Errorf("%s: query %q does not find message %d: %+v", c.name, c.query, seq, found.Hits)
		}
	}
	// Raw, the snippet is the stored text.
	cs, s = setup(t, mcpserver.Options{Thread: "t", Raw: true})
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", cases[0].text)}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	var found mcpserver.SearchOutput
	if e := call(t, cs, "memory_search", map[string]any{"query": "ghp"}, &found); e != "" || len(found.Hits) == 0 || !strings.Contains(found.Hits[0].Snippet, cases[0].secret) {
		t.Fatalf("raw: %s %+v", e, found.Hits)
	}
}

// TestSearchSnippetMarksMatches: a hit whose message holds a secret still marks the words
// the query matched, in text around them.
func TestSearchSnippetMarksMatches(t *testing.T) {
	cs, s := setup(t, mcpserver.Options{Thread: "t"})
	text := "the booking ZX81QP was paid with sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sAxx yesterday"
	if _, err := s.Append(context.Background(), "t", []chat.Message{chat.TextMessage("user", text)}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	var found mcpserver.SearchOutput
	if e := call(t, cs, "memory_search", map[string]any{"query": "zx81qp paid"}, &found); e != "" || len(found.Hits) != 1 {
		t.Fatalf("search: %s %+v", e, found.Hits)
	}
	snip := found.Hits[0].Snippet
	if !strings.Contains(snip, "[ZX81QP]") || !strings.Contains(snip, "[paid]") || !strings.Contains(snip, "[REDACTED:") || strings.Contains(snip, "Zq8vN3k") {
		t.Fatalf("snippet %q: want the matches marked and the key redacted", snip)
	}
}
