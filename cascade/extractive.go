package cascade

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

// DefaultExtractiveTokens is the summary budget of Extractive when a request sets no
// MaxTokens.
const DefaultExtractiveTokens = 1024

// Extractive is the built-in offline summarizer: deterministic, no network. It reads the
// transcript (package transcript) in the request's last user message and writes, within the
// request's MaxTokens, the user's requests, the assistant's answers and decisions, each tool
// call as name(key args) with the first line of its result (or its error line), the error
// lines, and the identifiers that appear. When the text is too long for the budget it cuts
// each line shorter, then drops the least important lines, oldest first (assistant texts,
// then tool calls, then lines of an earlier summary, then errors, then user requests). A text
// that is not a transcript is summarized by keeping its first and last lines.
//
// Its entry's Type and Model are "extractive".
type Extractive struct {
	// Count counts the tokens of a text; nil: an estimate of one token per 3 bytes.
	Count func(string) int
}

var _ Provider = Extractive{}

// Complete summarizes the request's last user message.
func (x Extractive) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	count := x.Count
	if count == nil {
		count = estimateTokens
	}
	budget := req.MaxTokens
	if req.TargetTokens > 0 && (budget <= 0 || req.TargetTokens < budget) {
		budget = req.TargetTokens
	}
	if budget <= 0 {
		budget = DefaultExtractiveTokens
	}
	input := lastUserText(req.Messages)
	var text string
	if msgs := transcript.Parse(input); len(msgs) > 0 {
		text = summarizeTranscript(msgs, budget, count)
	} else {
		text = summarizePlain(input, budget, count)
	}
	if strings.TrimSpace(text) == "" {
		text = "(empty)"
	}
	return llm.Response{
		Text:             text,
		FinishReason:     "stop",
		Model:            "extractive",
		PromptTokens:     count(input),
		CompletionTokens: count(text),
	}, nil
}

// estimateTokens is the count used without a Count function: one token per 3 bytes, on the
// safe side of the 3.5 to 4.5 bytes a token of English or JSON takes with OpenAI's encodings,
// so a summary sized with it fits its budget in the caller's tokens.
func estimateTokens(s string) int { return (len(s) + 2) / 3 }

// lastUserText is the content of the last user message, else of the last message.
func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	if len(msgs) > 0 {
		return msgs[len(msgs)-1].Content
	}
	return ""
}

// Sections of an extractive summary, in output order.
const (
	secEarlier = iota
	secUser
	secAssistant
	secTools
	secErrors
	numSections
)

var sectionTitles = [numSections]string{
	secEarlier:   "Earlier summary:",
	secUser:      "User requests:",
	secAssistant: "Assistant answers and decisions:",
	secTools:     "Tool calls:",
	secErrors:    "Errors:",
}

// dropRank orders sections by how soon their lines are dropped to fit the budget.
var dropRank = [numSections]int{
	secAssistant: 0,
	secTools:     1,
	secEarlier:   2,
	secErrors:    3,
	secUser:      4,
}

// item is one line of a summary.
type item struct {
	section int
	order   int    // position in the transcript, for dropping oldest first
	prefix  string // "#12" or "#12 get_order(id=1)": kept when the text is cut
	text    string
}

var (
	// errorLineRE matches lines that report an error, not lines that merely contain the
	// word (source code listings do): a line that starts with an error word (after an
	// optional "file:line:" position), an exception name with a colon, a JSON "error" key,
	// or a well-known failure phrase.
	errorLineRE = regexp.MustCompile(`(?i)^(?:[\w./-]*[a-z_][\w./-]*:\d+(?::\d+)?:\s*)?(?:error|fatal|panic|exception|traceback|failed|failure)\b` +
		`|^(?-i:[A-Z]\w*(?:Error|Exception))(?::|$)` +
		`|"error"\s*:` +
		`|\b(?:permission denied|no such file or directory|command not found|connection refused|not found|does not exist|cannot be|could not|unable to)\b`)
	identRE = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9_.:/#@-]*[A-Za-z0-9]`)
	// lineNumberRE matches the "12:" that code listings put before a line.
	lineNumberRE = regexp.MustCompile(`^\d+:`)
	// dateRE matches ISO dates and timestamps, which are not identifiers.
	dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)
)

// isErrorLine reports whether a (trimmed) line reports an error. Lines of a numbered code
// listing never do.
func isErrorLine(line string) bool {
	return !lineNumberRE.MatchString(line) && errorLineRE.MatchString(line)
}

func summarizeTranscript(msgs []transcript.Message, budget int, count func(string) int) string {
	var items []item
	var idents []string
	seen := map[string]bool{}
	errSeen := map[string]bool{}
	callIDs := map[string]bool{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			callIDs[tc.ID] = true
		}
	}
	// Identifiers the conversation itself mentions come first, then those of tool results.
	var resultIdents []string
	addIdents := func(s string, fromResult bool) {
		for _, w := range identRE.FindAllString(s, -1) {
			if identifierLike(w) && !seen[w] && !callIDs[w] {
				seen[w] = true
				if fromResult {
					resultIdents = append(resultIdents, w)
				} else {
					idents = append(idents, w)
				}
			}
		}
	}
	addErrors := func(order int, prefix, text string) {
		for line := range strings.SplitSeq(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || !isErrorLine(line) || errSeen[line] {
				continue
			}
			errSeen[line] = true
			items = append(items, item{section: secErrors, order: order, prefix: prefix, text: line})
		}
	}

	// calls waiting for their result: a result answers the latest unanswered call with its id.
	type pending struct{ item int }
	open := map[string][]pending{}
	first, last := int64(0), int64(0)
	for i, m := range msgs {
		if m.Seq > 0 {
			if first == 0 {
				first = m.Seq
			}
			last = m.Seq
		}
		prefix := seqPrefix(m.Seq, i)
		text := strings.TrimSpace(m.Text)
		switch m.Role {
		case transcript.RoleSummary:
			for line := range strings.SplitSeq(text, "\n") {
				if line = strings.TrimPrefix(strings.TrimSpace(line), "- "); line != "" {
					items = append(items, item{section: secEarlier, order: i, text: line})
				}
			}
			addIdents(text, false)
		case "user":
			if text != "" {
				items = append(items, item{section: secUser, order: i, prefix: prefix, text: oneLine(text)})
				addIdents(text, false)
				addErrors(i, prefix, text)
			}
		case "assistant":
			if text != "" {
				items = append(items, item{section: secAssistant, order: i, prefix: prefix, text: oneLine(text)})
				addIdents(text, false)
			}
			for _, tc := range m.ToolCalls {
				items = append(items, item{section: secTools, order: i, prefix: prefix + " " + callText(tc)})
				open[tc.ID] = append(open[tc.ID], pending{item: len(items) - 1})
				addIdents(tc.Arguments, false)
			}
		case "tool":
			result := resultLine(text)
			if p := open[m.ToolCallID]; len(p) > 0 {
				open[m.ToolCallID] = p[:len(p)-1]
				items[p[len(p)-1].item].text = "-> " + result
			} else {
				name := m.Name
				if name == "" {
					name = "tool"
				}
				items = append(items, item{section: secTools, order: i, prefix: prefix + " " + name + " result", text: "-> " + result})
			}
			addErrors(i, prefix, text)
			addIdents(text, true)
		}
	}
	idents = append(idents, resultIdents...)

	header := fmt.Sprintf("Summary of %d earlier messages (extractive, offline).", len(msgs))
	if first > 0 {
		header = fmt.Sprintf("Summary of messages #%d-#%d (extractive, offline).", first, last)
	}

	// Drop order: by section rank, oldest first.
	dropOrder := make([]int, len(items))
	for i := range dropOrder {
		dropOrder[i] = i
	}
	sort.SliceStable(dropOrder, func(a, b int) bool {
		ia, ib := items[dropOrder[a]], items[dropOrder[b]]
		if ra, rb := dropRank[ia.section], dropRank[ib.section]; ra != rb {
			return ra < rb
		}
		return ia.order < ib.order
	})

	render := func(lineMax, identMax, dropped int) string {
		skip := make([]bool, len(items))
		for _, i := range dropOrder[:dropped] {
			skip[i] = true
		}
		var b strings.Builder
		b.WriteString(header)
		hidden := 0 // lines of sections dropped whole
		for sec := range numSections {
			var lines []string
			omitted := 0
			for i, it := range items {
				if it.section != sec {
					continue
				}
				if skip[i] {
					omitted++
					continue
				}
				line := "- " + it.prefix
				switch {
				case it.text == "":
				case it.prefix == "":
					line += cut(it.text, lineMax)
				case strings.HasPrefix(it.text, "->"):
					line += " " + cut(it.text, lineMax)
				default:
					line += ": " + cut(it.text, lineMax)
				}
				lines = append(lines, line)
			}
			if len(lines) == 0 {
				hidden += omitted
				continue
			}
			b.WriteString("\n" + sectionTitles[sec])
			for _, l := range lines {
				b.WriteString("\n" + l)
			}
			if omitted > 0 {
				fmt.Fprintf(&b, "\n- (%d more omitted)", omitted)
			}
		}
		if n := min(len(idents), identMax); n > 0 {
			b.WriteString("\nIdentifiers: " + strings.Join(idents[:n], ", "))
			if n < len(idents) {
				fmt.Fprintf(&b, " (+%d more)", len(idents)-n)
			}
		}
		if hidden > 0 {
			fmt.Fprintf(&b, "\n(%d less important lines omitted)", hidden)
		}
		return b.String()
	}

	levels := []struct{ line, idents int }{{400, 60}, {240, 40}, {160, 30}, {120, 20}}
	for _, lv := range levels {
		if s := render(lv.line, lv.idents, 0); count(s) <= budget {
			return s
		}
	}
	lv := levels[len(levels)-1]
	// The fewest dropped lines that fit: render grows shorter as more lines are dropped.
	n := sort.Search(len(items)+1, func(d int) bool { return count(render(lv.line, lv.idents, d)) <= budget })
	if n <= len(items) {
		return render(lv.line, lv.idents, n)
	}
	return fitChars(render(lv.line, 0, len(items)), budget, count)
}

// seqPrefix names a message: "#12", or its position when it has no number.
func seqPrefix(seq int64, i int) string {
	if seq > 0 {
		return fmt.Sprintf("#%d", seq)
	}
	return fmt.Sprintf("[%d]", i+1)
}

// callText renders a tool call as name(key=value, ...), with short scalar arguments only.
func callText(tc transcript.ToolCall) string {
	var args map[string]any
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		raw := strings.TrimSpace(tc.Arguments)
		if raw == "" || raw == "{}" {
			return tc.Name + "()"
		}
		return tc.Name + "(" + cut(oneLine(raw), 60) + ")"
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		var v string
		switch a := args[k].(type) {
		case string:
			v = cut(oneLine(a), 40)
		case float64, bool:
			v = fmt.Sprint(a)
		case nil:
			v = "null"
		default:
			v = "..."
		}
		parts = append(parts, k+"="+v)
		if len(parts) == 4 && len(keys) > 4 {
			parts = append(parts, "...")
			break
		}
	}
	return tc.Name + "(" + strings.Join(parts, ", ") + ")"
}

// resultLine is a tool result's first error line, else its first non-empty line.
func resultLine(text string) string {
	firstLine := ""
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if isErrorLine(line) {
			return "error: " + oneLine(line)
		}
		if firstLine == "" {
			firstLine = oneLine(line)
		}
	}
	if firstLine == "" {
		return "(empty)"
	}
	return firstLine
}

// identifierLike keeps tokens that name things: ids with capitals and digits (W123, ZFA04Y,
// HAT170), snake or kebab names with digits (omar_davis_3817, gift_card_3481935), file paths,
// e-mail addresses. Words, numbers, dates, times, line-number prefixes ("12:") and short
// lower-case names with a digit (python3, address1) are not.
func identifierLike(w string) bool {
	if len(w) < 4 || len(w) > 80 || strings.HasPrefix(w, "call_") || strings.HasPrefix(w, "REDACTED") ||
		lineNumberRE.MatchString(w) || dateRE.MatchString(w) || strings.Contains(w, "://") {
		return false
	}
	if strings.Contains(w, "@") && strings.Contains(w, ".") {
		return true
	}
	if strings.Contains(w, "/") && strings.Contains(w, ".") {
		return true
	}
	var lower, upper, digits int
	for _, r := range w {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= 'a' && r <= 'z':
			lower++
		}
	}
	switch {
	case digits == 0 || lower+upper == 0:
		return false
	case upper > 0:
		return true // ZFA04Y, HAT170, W123
	default:
		return strings.ContainsAny(w, "_-") && lower >= 2 // omar_davis_3817; not 2024-05-15
	}
}

// oneLine joins a text's lines and spaces into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cut shortens s to about n bytes, on a rune boundary, marking the cut with "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return "..."
	}
	i := n - 3
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// summarizePlain keeps the first and last lines of a text that is not a transcript, as many
// as fit the budget, around a marker line.
func summarizePlain(text string, budget int, count func(string) int) string {
	text = strings.TrimSpace(text)
	if count(text) <= budget {
		return text
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, cut(l, 400))
		}
	}
	var head, tail []string
	used := count("[... 999999 lines omitted ...]") + 1
	i, j := 0, len(lines)-1
	for i <= j {
		l := lines[i]
		fromHead := len(head) <= len(tail)
		if !fromHead {
			l = lines[j]
		}
		need := count(l) + 1
		if used+need > budget {
			break
		}
		used += need
		if fromHead {
			head = append(head, l)
			i++
		} else {
			tail = append(tail, l)
			j--
		}
	}
	slices.Reverse(tail)
	out := strings.Join(head, "\n")
	if omitted := j - i + 1; omitted > 0 {
		out += fmt.Sprintf("\n[... %d lines omitted ...]\n", omitted)
	} else if len(tail) > 0 {
		out += "\n"
	}
	out += strings.Join(tail, "\n")
	return fitChars(strings.TrimSpace(out), budget, count)
}

// fitChars cuts s until count(s) <= budget, keeping at least a few characters.
func fitChars(s string, budget int, count func(string) int) string {
	for count(s) > budget && len(s) > 16 {
		s = cut(s, len(s)*3/4)
	}
	return s
}
