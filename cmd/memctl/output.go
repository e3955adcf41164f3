package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Stored text (message content, thread ids, names, provider errors) is anyone's: printed raw to
// a terminal, an escape sequence in it could move the cursor, rewrite the title, hide lines or
// ring the bell. Every human printer therefore writes through termWriter, and table cells and
// one-line fields through termLine; both use termText. JSON output is written as it is: JSON
// escapes control characters itself.

// termText returns s with every control character replaced by a visible escape: C0 controls and
// DEL as \x1b, C1 controls and the bidirectional formatting characters (which reorder what a
// terminal shows) as \u202e, and bytes that are not UTF-8 as \xff. With layout, newlines and
// tabs are kept.
func termText(s string, layout bool) string {
	if isClean(s, layout) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case layout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// termLine is termText for a table cell or a one-line field: newlines and tabs are escaped too.
func termLine(s string) string { return termText(s, false) }

func isClean(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return false // checked rune by rune: C1, bidi controls, invalid UTF-8
		}
		if c < 0x20 || c == 0x7f {
			if !layout || (c != '\n' && c != '\t') {
				return false
			}
		}
	}
	return true
}

// termWriter writes human output with termText (layout kept). A UTF-8 sequence split across
// writes is held until it is whole.
type termWriter struct {
	w       io.Writer
	pending []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	data := append(t.pending, p...)
	cut := len(data)
	// Hold back an incomplete rune at the end (at most 3 bytes).
	for back := 1; back <= 3 && back <= len(data); back++ {
		if utf8.RuneStart(data[len(data)-back]) {
			if !utf8.FullRune(data[len(data)-back:]) {
				cut = len(data) - back
			}
			break
		}
	}
	t.pending = append([]byte(nil), data[cut:]...)
	if _, err := io.WriteString(t.w, termText(string(data[:cut]), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete sequence (escaped: it is not UTF-8).
func (t *termWriter) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, termText(string(t.pending), true))
	t.pending = nil
	return err
}
