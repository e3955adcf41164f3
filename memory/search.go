package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/transcript"
)

// Search is in one place: every reader (memctl search, MCP's memory_search, serve's
// /api/search and its recall) calls Store.Search, which parses the query once, bounds it,
// ranks the hits one way and says of each hit whether the active context holds it.

// Bounds of a search.
const (
	// DefaultSearchLimit is the hits a search returns when its Limit is 0.
	DefaultSearchLimit = 10
	// MaxSearchLimit bounds Limit.
	MaxSearchLimit = 100
	// maxQueryWords bounds the distinct words of a query. The full-text index's cost grows
	// faster than the words of a query: 1,000 words took SQLite 23 s, a 1 MB query longer than
	// ten minutes, holding the database all that time.
	maxQueryWords = 16
)

// errQueryTooLong: the query has more than maxQueryWords distinct words.
var errQueryTooLong = NewError(CodeInvalid, "query too long")

// SearchHit is a message or summary that matched a search.
type SearchHit struct {
	Thread string `json:"thread"`
	// Seq is the message's place; for a summary, the last message it covers.
	Seq  int64  `json:"seq"`
	Role string `json:"role"`
	// Archived: a compaction moved the message out of the active context as it was appended
	// (a summary covers it, a view left it out or masked it), or the summary was superseded
	// or reverted.
	Archived bool `json:"archived"`
	// InActiveContext: the thread's active context holds the message as it is (a pinned
	// message too; a cut one not), or the summary is the current one.
	InActiveContext bool   `json:"in_active_context"`
	Snippet         string `json:"snippet"`
	// CompactionID is set when the hit is a summary.
	CompactionID int64 `json:"compaction_id,omitempty"`
	// Marks are the byte ranges [start, end) in Snippet of the matched text, the brackets
	// around each excluded: a brace in the stored text is never taken for a mark.
	Marks [][2]int `json:"-"`
}

// SearchOptions narrow a search.
type SearchOptions struct {
	Thread string // only this thread ("" = all)
	Limit  int    // at most this many hits (0: DefaultSearchLimit; at most MaxSearchLimit)
	// Redact, when set, redacts each snippet as text is redacted for a provider (MCP's tools,
	// serve's API and page). A snippet is a piece of the stored text with the matches in
	// brackets: the brackets or the snippet's edges can cut a secret so that the redactor no
	// longer recognises what is left ("[ghp]_R4nd...", a key whose first word is outside the
	// snippet), so a hit whose whole text holds a secret gets its snippet from the redacted
	// whole text instead, its matches marked in it.
	Redact func(string) string
	// RedactMessages, when set with Redact, redacts a message hit as a provider reads it
	// (compact.Compactor.ProviderView): it is given the hit's message with the message before
	// and after it, so that a secret only the conversation shows (a password typed alone after
	// a request for it, a token cut in two) is redacted too; it returns them in their order.
	// The hit's snippet is then taken from the message's redacted text whenever that differs
	// from the stored one.
	RedactMessages func(es []Entry) []transcript.Message
}

// Search finds stored messages and summaries, archived ones included, that contain every word
// of query. Any text is a valid query: words are matched as quoted phrases, never as search
// syntax; a word ending in * matches the words that start with it (OBUT* finds OBUT9V); a word
// given twice is searched once. A query without a word (a word has a letter or a digit) finds
// nothing; one of more than maxQueryWords distinct words is errQueryTooLong.
//
// The ranking: the messages first, best match first, then the summaries, best match first; a
// superseded summary is left out when a newer summary of its thread that matched too covers
// the messages it covered (each summary folds the one before it).
func (s *Store) Search(ctx context.Context, query string, opt SearchOptions) ([]SearchHit, error) {
	terms, err := searchTerms(query)
	if err != nil || len(terms) == 0 {
		return []SearchHit{}, err
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	match := s.h.Match(joinTerms(terms))
	if match == "" {
		return []SearchHit{}, nil
	}
	// Every message committed before the search is indexed first (SQLite indexes after the
	// commit): nothing acknowledged is missed.
	if err := s.h.IndexPending(ctx); err != nil {
		return nil, err
	}
	out := []SearchHit{}
	open, close := snippetMarks()
	err = s.h.ReadTx(ctx, func(q db.Querier) error {
		out = out[:0]
		msgs, err := s.h.SearchMessages(ctx, q, db.SearchMessagesParams{MarkOpen: open, MarkClose: close, Query: match, ThreadID: opt.Thread, MaxRows: int64(limit)})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			snip, marks := markSnippet(m.Snippet, open, close)
			out = append(out, SearchHit{Thread: m.ThreadID, Seq: m.Seq, Role: m.Role, Archived: m.Archived != 0, Snippet: snip, Marks: marks})
		}
		if len(out) < limit {
			// Superseded summaries are collapsed after the query: ask for more than the room left.
			sums, err := s.h.SearchSummaries(ctx, q, db.SearchSummariesParams{MarkOpen: open, MarkClose: close, Query: match, ThreadID: opt.Thread,
				MaxRows: int64(min(4*(limit-len(out)), 4*MaxSearchLimit))})
			if err != nil {
				return err
			}
			var found []SearchHit
			for _, m := range sums {
				snip, marks := markSnippet(m.Snippet, open, close)
				found = append(found, SearchHit{Thread: m.ThreadID, Seq: m.ToSeq.Int64, Role: m.SummaryRole.String,
					Archived: m.Superseded != 0, Snippet: snip, Marks: marks, CompactionID: m.ID})
			}
			// A summary in the active context (a view may keep several) is never collapsed.
			if err := s.markActive(ctx, q, found); err != nil {
				return err
			}
			found = collapseSummaries(found)
			out = append(out, found[:min(len(found), limit-len(out))]...)
		}
		if err := s.markActive(ctx, q, out); err != nil {
			return err
		}
		if opt.Redact != nil {
			return s.redactHits(ctx, q, out, terms, opt.Redact, opt.RedactMessages)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	return out, nil
}

// searchTerms parses a query once: its words (db.SearchTerms), each once, bounded (none: the
// query has no word).
func searchTerms(query string) ([]db.SearchTerm, error) {
	seen := map[string]bool{}
	var out []db.SearchTerm
	for _, t := range db.SearchTerms(query) {
		k := strings.ToLower(t.Word)
		if t.Prefix {
			k += "*"
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	if len(out) > maxQueryWords {
		return nil, fmt.Errorf("%w: %d distinct words, at most %d: search for the few words that identify what you need (an id, a name)",
			errQueryTooLong, len(out), maxQueryWords)
	}
	return out, nil
}

// joinTerms writes terms back as a query, each word once: what the backend's match turns into
// its own syntax.
func joinTerms(terms []db.SearchTerm) string {
	words := make([]string, len(terms))
	for i, t := range terms {
		words[i] = t.Word
		if t.Prefix {
			words[i] += "*"
		}
	}
	return strings.Join(words, " ")
}

// collapseSummaries leaves out each superseded summary that a newer summary hit of its thread
// covers (its last message at or after the older one's), keeping the order of the rest; a
// summary in the active context stays.
func collapseSummaries(hits []SearchHit) []SearchHit {
	newest := map[string]SearchHit{}
	for _, h := range hits {
		if n, ok := newest[h.Thread]; !ok || h.CompactionID > n.CompactionID {
			newest[h.Thread] = h
		}
	}
	return slices.DeleteFunc(hits, func(h SearchHit) bool {
		n := newest[h.Thread]
		return h.Archived && !h.InActiveContext && n.CompactionID > h.CompactionID && n.Seq >= h.Seq
	})
}

// markActive sets InActiveContext on each hit, from one read of each thread's current
// compaction and pins (never its messages).
func (s *Store) markActive(ctx context.Context, q db.Querier, hits []SearchHit) error {
	held := map[string]func(SearchHit) bool{}
	for i := range hits {
		h := &hits[i]
		in, ok := held[h.Thread]
		if !ok {
			var err error
			if in, err = activeRule(ctx, q, h.Thread); err != nil {
				return err
			}
			held[h.Thread] = in
		}
		h.InActiveContext = in(*h)
	}
	return nil
}

// activeRule returns whether a hit of thread is in its active context as it is.
func activeRule(ctx context.Context, q db.Querier, thread string) (func(SearchHit) bool, error) {
	pins, err := q.ListPins(ctx, thread)
	if err != nil {
		return nil, err
	}
	pinned := func(seq int64) bool {
		return slices.ContainsFunc(pins, func(p db.Pin) bool { return seq >= p.FromSeq && seq <= p.ToSeq })
	}
	cur, err := q.CurrentCompaction(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return func(h SearchHit) bool { return h.CompactionID == 0 }, nil
	}
	if err != nil {
		return nil, err
	}
	var v view
	summary := cur.ID
	if cur.View != "" {
		if err := json.Unmarshal([]byte(cur.View), &v); err != nil {
			return nil, fmt.Errorf("thread %q: compaction %d: stored view: %w", thread, cur.ID, err)
		}
		summary = v.Summary
	}
	return func(h SearchHit) bool {
		if h.CompactionID != 0 {
			return summary != 0 && h.CompactionID == summary || slices.ContainsFunc(v.Others, func(r SummaryRef) bool { return r.ID == h.CompactionID })
		}
		seq := h.Seq
		switch {
		case pinned(seq):
			return true
		case slices.Contains(v.Held, seq):
			return !slices.ContainsFunc(v.Cut, func(c Cut) bool { return c.Seq == seq })
		case summary != 0 && seq >= cur.FromSeq.Int64 && seq <= cur.ToSeq.Int64,
			slices.ContainsFunc(v.Others, func(r SummaryRef) bool { return seq >= r.From && seq <= r.To }):
			return false
		case slices.ContainsFunc(v.Omitted, func(r SeqRange) bool { return seq >= r[0] && seq <= r[1] }):
			return false
		}
		return !slices.ContainsFunc(v.Masked, func(m Masked) bool { return m.Seq == seq }) &&
			!slices.ContainsFunc(v.Cut, func(c Cut) bool { return c.Seq == seq })
	}, nil
}

// redactHits redacts the snippets of hits (see SearchOptions.Redact).
func (s *Store) redactHits(ctx context.Context, q db.Querier, hits []SearchHit, terms []db.SearchTerm, redact func(string) string,
	inContext func([]Entry) []transcript.Message) error {
	for i := range hits {
		h := &hits[i]
		if h.CompactionID != 0 {
			// A summary is stored redacted: only the marks can have cut a secret it kept.
			if plain := unmark(h.Snippet, h.Marks); redact(plain) != plain {
				h.Snippet, h.Marks = snippetOf(redact(plain), terms)
			} else {
				h.Snippet = redact(h.Snippet)
			}
			continue
		}
		if inContext != nil {
			es, err := s.messagesBetween(ctx, q, h.Thread, max(h.Seq-1, 1), h.Seq+1, false)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(es, func(e Entry) bool { return e.Seq == h.Seq })
			if i < 0 {
				return fmt.Errorf("thread %q: message %d: not read", h.Thread, h.Seq)
			}
			view := inContext(es)[i]
			text := searchableText(view)
			raw := string(es[i].Message.Content) // text in parts Text does not join
			secret := redact(raw) != raw
			if text != searchableText(transcriptOf(es[i].Message)) || secret {
				h.Snippet, h.Marks = snippetOf(text, terms)
			} else {
				h.Snippet = redact(h.Snippet)
			}
			continue
		}
		es, err := s.messagesBetween(ctx, q, h.Thread, h.Seq, h.Seq, false)
		if err != nil {
			return err
		}
		if len(es) != 1 {
			return fmt.Errorf("thread %q: message %d: read %d messages", h.Thread, h.Seq, len(es))
		}
		if text, secret := redactedText(es[0].Message, redact); secret {
			h.Snippet, h.Marks = snippetOf(text, terms)
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
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	return strings.Join(parts, " "), changed
}

// searchableText is the text of a message as a search hit shows it: its text, name and tool
// calls, joined by spaces.
func searchableText(m transcript.Message) string {
	parts := []string{m.Text, m.Name}
	for _, c := range m.ToolCalls {
		parts = append(parts, c.ID, c.Name, c.Arguments)
	}
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	return strings.Join(parts, " ")
}

// transcriptOf is a message's fields as searchableText reads them, unredacted.
func transcriptOf(m chat.Message) transcript.Message {
	t := transcript.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, Text: m.Text()}
	for _, c := range m.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, transcript.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return t
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
// between brackets and "..." where text was cut, and where the matches are.
func snippetOf(text string, terms []db.SearchTerm) (string, [][2]int) {
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
	var marks [][2]int
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
		b.WriteByte('[')
		marks = append(marks, [2]int{b.Len(), b.Len() + n})
		b.WriteString(piece[i : i+n])
		b.WriteByte(']')
		at = i + n
	}
	if end < len(text) {
		b.WriteString("...")
	}
	return b.String(), marks
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

// snippetMarks returns the marks the search asks SQLite to put around matched text: random, so
// that no stored text can contain them.
func snippetMarks() (open, close string) {
	var b [12]byte
	rand.Read(b[:])
	n := hex.EncodeToString(b[:])
	return "\x1f" + n + "(", "\x1f" + n + ")"
}

// markSnippet replaces the marks open and close in a snippet by brackets and returns where the
// marked text is.
func markSnippet(s, open, close string) (string, [][2]int) {
	var b strings.Builder
	var marks [][2]int
	for {
		i := strings.Index(s, open)
		if i < 0 {
			break
		}
		j := strings.Index(s[i+len(open):], close)
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteByte('[')
		start := b.Len()
		b.WriteString(s[i+len(open) : i+len(open)+j])
		marks = append(marks, [2]int{start, b.Len()})
		b.WriteByte(']')
		s = s[i+len(open)+j+len(close):]
	}
	b.WriteString(s)
	return b.String(), marks
}
