package db

import (
	"strings"
)

// ftsQuery turns search text into an FTS5 query that requires every word of SearchTerms: each
// word is a quoted phrase (inner quotes doubled), so no user text is read as FTS5 syntax; a
// prefix is the phrase followed by *. "" when there is no word. (FTS5 reads a query string only
// up to its first NUL, which would leave a phrase unterminated: SearchTerms splits there.)
func ftsQuery(text string) string {
	var parts []string
	for _, t := range SearchTerms(text) {
		phrase := `"` + strings.ReplaceAll(t.Word, `"`, `""`) + `"`
		if t.Prefix {
			phrase += "*"
		}
		parts = append(parts, phrase)
	}
	return strings.Join(parts, " ")
}
