package postgres

import (
	"strings"

	"github.com/memcascade/memcascade/db"
)

// TSQuery turns user text into a query for to_tsquery('simple', ...) that requires every word,
// as package db's ftsQuery does for SQLite's FTS5: each word becomes a quoted operand (inner
// backslashes and quotes escaped), so no user text is read as tsquery syntax; a word ending in
// * becomes a prefix operand (:*). A word the parser splits (a-b, a'b) must match as a phrase.
// Words without a letter or digit match nothing the parser indexes and are dropped; "" means
// there is nothing to search for. NUL, which PostgreSQL text cannot hold, separates words; a byte that is not UTF-8 is U+FFFD.
func TSQuery(text string) string {
	// Bytes that are not UTF-8 become U+FFFD, as in stored text: PostgreSQL refuses them.
	text = strings.ToValidUTF8(text, "\uFFFD")
	var parts []string
	for _, t := range db.SearchTerms(text) {
		word := strings.ReplaceAll(t.Word, `\`, `\\`)
		operand := "'" + strings.ReplaceAll(word, "'", "''") + "'"
		if t.Prefix {
			operand += ":*"
		}
		parts = append(parts, operand)
	}
	return strings.Join(parts, " & ")
}
