package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// RedactHits redacts the snippets of hits (of query) as text is redacted for a provider
// (redact; nil changes nothing). A snippet is a piece of the stored text with the matches in
// brackets: the brackets, or the snippet's edges, can cut a secret so that the redactor no
// longer recognises what is left ("[ghp]_R4nd...", "sk-[proj]-Zq8v...", a key whose first
// word is outside the snippet). So a hit whose whole message (or summary) holds a secret gets
// its snippet from the redacted whole text instead, its matches marked in it.
func RedactHits(ctx context.Context, s *memory.Store, query string, hits []SearchHit, redact func(string) string) error {
	if redact == nil {
		return nil
	}
	terms := db.SearchTerms(query)
	for i := range hits {
		h := &hits[i]
		if h.CompactionID != 0 {
			// A summary is stored redacted: only the marks can have cut a secret it kept.
			if plain := unmark(h.Snippet, h.marks); redact(plain) != plain {
				h.Snippet = snippetOf(redact(plain), terms)
			} else {
				h.Snippet = redact(h.Snippet)
			}
			continue
		}
		es, err := s.Messages(ctx, h.Thread, h.Seq, h.Seq)
		if err != nil {
			return err
		}
		if len(es) != 1 {
			return fmt.Errorf("thread %q: message %d: read %d messages", h.Thread, h.Seq, len(es))
		}
		if text, secret := redactedText(es[0].Message, redact); secret {
			h.Snippet = snippetOf(text, terms)
		} else {
			h.Snippet = redact(h.Snippet)
		}
	}
	return nil
}

// redactedText returns the searchable text of m (its text, name and tool calls), redacted,
// and whether redacting changed any of it.
func redactedText(m chat.Message, redact func(string) string) (string, bool) {
	parts := []string{m.Text(), m.Name}
	for _, c := range m.ToolCalls {
		parts = append(parts, c.ID, c.Function.Name, c.Function.Arguments)
	}
	changed := false
	for i, p := range parts {
		if r := redact(p); r != p {
			parts[i], changed = r, true
		}
	}
	if raw := string(m.Content); redact(raw) != raw { // text in parts Text does not join
		changed = true
	}
	return strings.Join(nonEmpty(parts), " "), changed
}

// nonEmpty drops the empty strings of parts.
func nonEmpty(parts []string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// unmark removes the brackets around the marks of a snippet.
func unmark(snippet string, marks [][2]int) string {
	var b strings.Builder
	at := 0
	for _, m := range marks {
		if m[0] < 1 || m[1] >= len(snippet) || m[0]-1 < at {
			continue
		}
		b.WriteString(snippet[at : m[0]-1])
		b.WriteString(snippet[m[0]:m[1]])
		at = m[1] + 1
	}
	b.WriteString(snippet[at:])
	return b.String()
}

// Bounds of a snippet made by snippetOf: this many bytes before the first match and after it.
const (
	snippetBefore = 60
	snippetAfter  = 120
)

// snippetOf returns a piece of text around the first match of terms, with every match in it
// between brackets and "..." where text was cut.
func snippetOf(text string, terms []db.SearchTerm) string {
	first, _ := nextMatch(text, 0, terms)
	if first < 0 {
		first = 0
	}
	start, end := max(first-snippetBefore, 0), min(first+snippetAfter, len(text))
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("...")
	}
	piece := text[start:end]
	for at := 0; at < len(piece); {
		i, n := nextMatch(piece, at, terms)
		if i < 0 {
			b.WriteString(piece[at:])
			break
		}
		b.WriteString(piece[at:i])
		b.WriteString("[" + piece[i:i+n] + "]")
		at = i + n
	}
	if end < len(text) {
		b.WriteString("...")
	}
	return b.String()
}

// nextMatch returns where the first match of a term at or after from starts in text, and its
// length in bytes: a word of text (letters and digits) equal to the term without regard to
// case, or starting with it for a prefix term; -1 when none.
func nextMatch(text string, from int, terms []db.SearchTerm) (int, int) {
	for i := from; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		j := i
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r) {
				break
			}
			j += size
		}
		word := text[i:j]
		for _, t := range terms {
			for _, tw := range strings.FieldsFunc(t.Word, func(r rune) bool { return !isWordRune(r) }) {
				if strings.EqualFold(word, tw) || t.Prefix && strings.HasPrefix(strings.ToLower(word), strings.ToLower(tw)) {
					return i, j - i
				}
			}
		}
		i = j
	}
	return -1, 0
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
