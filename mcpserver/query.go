package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/db"
)

// MaxQueryWords bounds the distinct words of a search. The full-text index's cost grows faster
// than the words of a query: 1,000 words took SQLite 23 s, a 1 MB query longer than ten
// minutes, holding the server and the database all that time.
const MaxQueryWords = 16

// ErrQueryTooLong: a search's query has more than MaxQueryWords distinct words.
var ErrQueryTooLong = errors.New("query too long")

// boundQuery returns query with each word once (the index matches words without regard to
// case, and every word must match: a word given again adds nothing but time), or
// ErrQueryTooLong.
func boundQuery(query string) (string, error) {
	terms := db.SearchTerms(query)
	seen := make(map[string]bool, len(terms))
	var words []string
	for _, t := range terms {
		w := t.Word
		if t.Prefix {
			w += "*"
		}
		if k := strings.ToLower(w); !seen[k] {
			seen[k] = true
			words = append(words, w)
		}
	}
	if len(words) > MaxQueryWords {
		return "", fmt.Errorf("%w: %d distinct words, at most %d: search for the few words that identify what you need (an id, a name)",
			ErrQueryTooLong, len(words), MaxQueryWords)
	}
	return strings.Join(words, " "), nil
}
