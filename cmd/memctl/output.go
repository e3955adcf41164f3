package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-isatty"

	"github.com/memcascade/memcascade/memory"
)

// What memctl prints: JSON on stdout as it is, human text through termWriter, tables aligned
// by table, times and sizes in one format each.

// printJSON writes v as one indented JSON value.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// printResult prints v as JSON with --json, else the line format (with args) for a person.
func (a *app) printResult(v any, format string, args ...any) error {
	if a.json {
		return a.printJSON(v)
	}
	fmt.Fprintf(a.out, format, args...)
	return nil
}

// printTable prints v as JSON with --json, else a table under header whose rows rows writes.
func (a *app) printTable(v any, header string, rows func(*table)) error {
	if a.json {
		return a.printJSON(v)
	}
	tw := newTable(a.out, header)
	rows(tw)
	tw.flush()
	return nil
}

// table writes rows aligned in columns under a header (bold on a colour terminal).
type table struct {
	w   *tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

func newTable(w io.Writer, header string) *table {
	t := &table{out: w}
	t.w = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t.w, header)
	return t
}

// row writes one row; each cell is shown with termLine, so stored text can neither break the
// columns nor reach the terminal as control characters.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = termLine(c)
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}
func (t *table) flush() {
	t.w.Flush()
	head, rest, _ := strings.Cut(t.buf.String(), "\n")
	paint(t.out, styleHeading, head)
	fmt.Fprint(t.out, "\n"+rest)
	t.buf.Reset()
}

// timeText is a time in tables and lines, to the second: UTC, or local time with --local-time.
func (a *app) timeText(t time.Time) string {
	if a.localTime {
		return t.Local().Format("2006-01-02 15:04:05")
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// zone names the zone of timeText in headings: "UTC", or the local zone's abbreviation.
func (a *app) zone() string {
	if a.localTime {
		name, _ := time.Now().Zone()
		return name
	}
	return "UTC"
}

// Colour: on a terminal only, never with NO_COLOR set (to any value), never in JSON. It marks
// headings, status words and the "memctl:" of errors; the text itself is unchanged.
const (
	styleHeading = "1"  // bold
	styleError   = "31" // red
	styleGood    = "32" // green
	styleWarn    = "33" // yellow
)

// paint writes s (one line of text) to w in style when w is a colour terminal, else as it is.
func paint(w io.Writer, style, s string) {
	tw, ok := w.(*termWriter)
	if !ok || !tw.color {
		fmt.Fprint(w, s)
		return
	}
	tw.Flush()
	io.WriteString(tw.w, "\x1b["+style+"m"+termText(s, true)+"\x1b[0m")
}

// statusStyle is the colour of a compaction status.
func statusStyle(status memory.Status) string {
	switch status {
	case memory.StatusApplied, memory.StatusReverted:
		return styleGood
	case memory.StatusFailed:
		return styleError
	}
	return styleWarn
}

// terminal reports whether f is an interactive terminal, for colour, search highlights and
// import progress (a variable: tests stand in a terminal).
var terminal = isTerminal

// colorAllowed: NO_COLOR unset.
func colorAllowed() bool {
	_, set := os.LookupEnv("NO_COLOR")
	return !set
}

// byteSize is a file size for a person: bytes, KiB or MiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// oneLine folds s onto one line: newlines become "; ", runs of white space one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// isTerminal reports whether f is an interactive terminal (not /dev/null, which is a character
// device too).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd())
}

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
	// color: w is a terminal that may show colour (see paint).
	color bool
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
