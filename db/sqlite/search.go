package sqlite

import (
	"strings"

	"github.com/memcascade/memcascade/db"
)

// FTSQuery turns search text into an FTS5 query that requires every word of db.SearchTerms: each
// word is a quoted phrase (inner quotes doubled), so no user text is read as FTS5 syntax; a
// prefix is the phrase followed by *. "" when there is no word. (FTS5 reads a query string only
// up to its first NUL, which would leave a phrase unterminated: db.SearchTerms splits there.)
func FTSQuery(text string) string {
	var parts []string
	for _, t := range db.SearchTerms(text) {
		phrase := `"` + strings.ReplaceAll(t.Word, `"`, `""`) + `"`
		if t.Prefix {
			phrase += "*"
		}
		parts = append(parts, phrase)
	}
	return strings.Join(parts, " ")
}
