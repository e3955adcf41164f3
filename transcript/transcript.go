// Package transcript renders conversation messages as the plain-text transcript that a
// summarizer reads, parses such a transcript back, and names the sections a summary is written
// in. The compactor renders and asks a model for those sections; the offline summarizer
// (package extractive) reads the messages themselves and writes the same sections. It owns
// the transcript format and the section names, imports nothing of this module and must stay a
// leaf.
//
// The format: each message starts with a header line, in square brackets, of its seq (if it
// has one), its role and, when set, its name and the id of the tool call it answers:
//
//	[#12 assistant]
//	[#13 tool name=get_order call=call_1]
//	[summary]
//
// The header is short because on threads of one-word messages it outweighs their text:
// "[#1234 assistant]" and its line break are 5 tokens in o200k_base, where the earlier
// "=== #1234 assistant ===" took 7, and "call=c12" takes 4 fewer than "tool_call_id=c12".
//
// followed by its text and, for an assistant message, one line per tool call:
//
//	-> call get_order {"order_id":"W123"} (id call_1)
//
// No field can start a line of its own or forge a header:
//
//   - a content line that would read as a header or a call line (leading and trailing white
//     space ignored) is indented by one space, and Parse removes that space;
//   - the role, name, tool call id, a call's name and id are attributes: white space, control
//     characters, '%' and a leading '#' are written %XX, an empty value as "-" (and a value
//     "-" as %2D), and Parse decodes them;
//   - a call's arguments are written on one line, their line breaks as spaces.
//
// So Parse(Render(msgs)) gives msgs back, except that a text's trailing line breaks are
// dropped, line breaks in arguments become spaces, and a Seq below 1 reads as 0. Long texts
// are cut in the middle (Options.MaxTextBytes) with a visible marker line that says how much
// was left out.
package transcript

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message is one message of a transcript.
type Message struct {
	Seq        int64 // its place in the thread (0: not numbered, like a previous summary)
	Role       string
	Name       string
	ToolCallID string
	Text       string
	ToolCalls  []ToolCall
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Options tune Render.
type Options struct {
	// MaxTextBytes cuts a message's text (and a call's arguments) longer than this many bytes,
	// keeping its head and tail around a marker line. 0 means no limit.
	MaxTextBytes int
}

// RoleSummary is the role under which a previous summary is rendered.
const RoleSummary = "summary"

var (
	headerRE = regexp.MustCompile(`^\[(?:#(\d+) )?(\S+)((?: [a-z]+=\S*)*)\]$`)
	callRE   = regexp.MustCompile(`^-> call (\S+) (.*?) \(id (\S+)\)$`)
)

// Render writes msgs as a transcript.
func Render(msgs []Message, opt Options) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		RenderMessage(&b, m, opt)
	}
	return b.String()
}

// RenderMessage appends one message to b.
func RenderMessage(b *strings.Builder, m Message, opt Options) {
	b.WriteByte('[')
	if m.Seq > 0 {
		b.WriteString("#")
		b.WriteString(strconv.FormatInt(m.Seq, 10))
		b.WriteByte(' ')
	}
	b.WriteString(attr(m.Role))
	if m.Name != "" {
		b.WriteString(" name=" + attr(m.Name))
	}
	if m.ToolCallID != "" {
		b.WriteString(" call=" + attr(m.ToolCallID))
	}
	b.WriteString("]\n")
	if m.Text != "" {
		for line := range strings.SplitSeq(Trim(m.Text, opt.MaxTextBytes), "\n") {
			if special(line) {
				b.WriteByte(' ')
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	for _, c := range m.ToolCalls {
		args := strings.ReplaceAll(Trim(c.Arguments, opt.MaxTextBytes), "\n", " ")
		fmt.Fprintf(b, "-> call %s %s (id %s)\n", attr(c.Name), args, attr(c.ID))
	}
}

// special reports whether line, without its leading and trailing white space, reads as a
// header or a call line.
func special(line string) bool {
	line = strings.TrimSpace(line)
	return headerRE.MatchString(line) || strings.HasPrefix(line, "-> call ")
}

// attr encodes s as a header attribute or call field: one word with no white space or control
// characters, "-" when empty.
func attr(s string) string {
	if s == "" {
		return "-"
	}
	if s == "-" {
		return "%2D"
	}
	if plainAttr(s) {
		return s // nothing to encode: the common case, with no copy
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '%' || (r == '#' && i == 0) || unicode.IsSpace(r) || unicode.IsControl(r) {
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// plainAttr reports whether attr leaves s as it is: printable ASCII other than space and '%',
// not starting with '#'.
func plainAttr(s string) bool {
	if s[0] == '#' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '%' || c >= 0x7f {
			return false
		}
	}
	return true
}

// unattr decodes an attribute written by attr. A '%' not followed by two hex digits is kept.
func unattr(s string) string {
	if s == "-" {
		return ""
	}
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Trim cuts s to about max bytes by keeping its first two thirds and last third around a
// marker line that says how many bytes were left out. max <= 0 means no limit.
func Trim(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[... %d bytes trimmed ...]\n%s", s[:head], start-head, s[start:])
}

// Parse reads a transcript written by Render. Text before the first header is ignored.
func Parse(s string) []Message {
	var msgs []Message
	var text []string
	flush := func() {
		if len(msgs) > 0 {
			msgs[len(msgs)-1].Text = strings.TrimRight(strings.Join(text, "\n"), "\n")
		}
		text = text[:0]
	}
	for line := range strings.SplitSeq(s, "\n") {
		if m := headerRE.FindStringSubmatch(line); m != nil {
			flush()
			msg := Message{Role: unattr(m[2])}
			msg.Seq, _ = strconv.ParseInt(m[1], 10, 64)
			for kv := range strings.FieldsSeq(m[3]) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "name":
					msg.Name = unattr(v)
				case "call":
					msg.ToolCallID = unattr(v)
				}
			}
			msgs = append(msgs, msg)
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		if m := callRE.FindStringSubmatch(line); m != nil {
			last := &msgs[len(msgs)-1]
			last.ToolCalls = append(last.ToolCalls, ToolCall{Name: unattr(m[1]), Arguments: m[2], ID: unattr(m[3])})
			continue
		}
		if strings.HasPrefix(line, " ") && special(line) {
			line = line[1:] // a rendered content line that was indented to escape it
		}
		text = append(text, line)
	}
	flush()
	return msgs
}
