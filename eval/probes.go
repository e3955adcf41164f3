package eval

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
)

// The kinds of probes.
const (
	KindRecall       = "recall"       // a value of the facts ledger, asked by the message it was given in
	KindArtifact     = "artifact"     // an action and its outcome
	KindConstraint   = "constraint"   // a user constraint, in the user's words
	KindContinuation = "continuation" // the latest user request
)

// ProbeKinds lists the probe kinds in the order of the table.
var ProbeKinds = []string{KindRecall, KindArtifact, KindConstraint, KindContinuation}

// recallKinds are the fact kinds a recall probe asks for.
var recallKinds = []facts.Kind{facts.KindID, facts.KindAmount, facts.KindDate, facts.KindPercent,
	facts.KindEmail, facts.KindPath, facts.KindURL}

// Question is what an answerer is given: the question and its cues, never the expected answer.
type Question struct {
	Kind string `json:"kind"`
	Text string `json:"question"`
	// Want is the kind of value asked (a recall probe's fact kind).
	Want facts.Kind `json:"want,omitempty"`
	// Role and Begins name the message the value was given in; After is the words just before
	// the value in it.
	Role   string `json:"role,omitempty"`
	Begins string `json:"begins,omitempty"`
	After  string `json:"after,omitempty"`
	// Call and Key name an action: the tool's name and one key=value of its arguments.
	Call string `json:"call,omitempty"`
	Key  string `json:"key,omitempty"`
}

// Probe is a question with its expected answer, which occurs verbatim in the original history.
type Probe struct {
	Question
	Expected string `json:"expected"`
	// Seq is the message (1, 2, ...) the answer was established in.
	Seq int `json:"seq"`
}

// messageText is the text of a message as the probes and the lookup read it: its content, then
// its tool calls one per line.
func messageText(m chat.Message) string {
	var b strings.Builder
	b.WriteString(m.Text())
	for _, c := range m.ToolCalls {
		b.WriteString("\n" + c.Function.Name + " " + c.Function.Arguments)
	}
	return b.String()
}

func toFacts(msgs []chat.Message) []facts.Message {
	out := make([]facts.Message, len(msgs))
	for i, m := range msgs {
		fm := facts.Message{Role: m.Role, Content: m.Text(), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			fm.ToolCalls = append(fm.ToolCalls, facts.ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments, ID: tc.ID})
		}
		out[i] = fm
	}
	return out
}

// beginning is the first words of a text, at most n, on one line.
func beginning(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = w[:n]
	}
	return strings.Join(w, " ")
}

// words are the runs of letters, digits and underscores of s.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
}

// cueBefore is the last n words before s[:i].
func cueBefore(s string, i, n int) string {
	w := words(s[:i])
	if len(w) > n {
		w = w[len(w)-n:]
	}
	return strings.Join(w, " ")
}

// Probes returns the probes of the first n messages of msgs, at most max of each kind (0: all),
// spread evenly over the thread. They are the same for the same messages.
func Probes(msgs []chat.Message, n, max int) []Probe {
	msgs = msgs[:n]
	ledger := facts.Extract(toFacts(msgs))
	history := normalize(historyText(msgs))
	grams := ngrams(msgs)
	var recall, artifact, constraint []Probe
	seen := map[string]bool{}
	add := func(dst *[]Probe, p Probe) {
		key := p.Kind + "\x00" + p.Text
		if seen[key] || !containsNorm(history, p.Expected) {
			return
		}
		seen[key] = true
		*dst = append(*dst, p)
	}
	for _, f := range ledger {
		if f.Seq < 0 || f.Seq >= len(msgs) {
			continue
		}
		m := msgs[f.Seq]
		content := m.Text()
		switch {
		case slices.Contains(recallKinds, f.Kind):
			text := messageText(m)
			i := strings.Index(text, f.Text)
			if i < 0 {
				continue
			}
			// The words before the value, as many as make them point at one place of the history.
			after := ""
			for n := 2; n <= maxCue; n++ {
				c := cueBefore(text, i, n)
				if len(words(c)) < n {
					break
				}
				if grams[strings.ToLower(c)] == 1 {
					after = c
					break
				}
			}
			if after == "" {
				continue
			}
			begins := beginning(text[:i], 8) // never the value itself
			q := fmt.Sprintf("What is the %s the %s gave in the message that begins '%s', right after '%s'?", f.Kind, m.Role, begins, after)
			add(&recall, Probe{Question: Question{Kind: KindRecall, Text: q, Want: f.Kind, Role: m.Role, Begins: begins, After: after},
				Expected: f.Text, Seq: f.Seq + 1})
		case f.Kind == facts.KindToolCall && f.Outcome != "":
			name, args, ok := strings.Cut(f.Text, "(")
			if !ok {
				continue
			}
			key := distinctKey(ledger, name, strings.TrimSuffix(args, ")"))
			if key == "" {
				continue
			}
			expected := f.Outcome
			if expected == "ok" {
				// "ok" is the ledger's word, not the tool's: a short plain result is what it returned.
				expected = shortResult(msgs, f)
				if expected == "" {
					continue
				}
			}
			q := fmt.Sprintf("Which call %s was made with %s, and what did it return?", name, key)
			add(&artifact, Probe{Question: Question{Kind: KindArtifact, Text: q, Call: name, Key: key},
				Expected: expected, Seq: f.Seq + 1})
		case f.Kind == facts.KindConstraint && m.Role == chat.RoleUser:
			if !strings.Contains(content, f.Text) {
				continue
			}
			begins := beginning(content, 8)
			q := fmt.Sprintf("What constraint did the user state in the message that begins '%s'? Answer in the user's words.", begins)
			add(&constraint, Probe{Question: Question{Kind: KindConstraint, Text: q, Role: m.Role, Begins: begins},
				Expected: f.Text, Seq: f.Seq + 1})
		}
	}
	var out []Probe
	for _, ps := range [][]Probe{recall, artifact, constraint} {
		slices.SortStableFunc(ps, func(a, b Probe) int { return a.Seq - b.Seq })
		out = append(out, spread(ps, max)...)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == chat.RoleUser {
			if text := strings.TrimSpace(msgs[i].Text()); text != "" {
				out = append(out, Probe{Question: Question{Kind: KindContinuation, Text: "What is the user's latest request? Quote it."},
					Expected: text, Seq: i + 1})
			}
			break
		}
	}
	return out
}

// shortResult is the result of the call f records when it is short, on one line and not a
// JSON document ("23553.0", "Transfer successful"); else "".
func shortResult(msgs []chat.Message, f facts.Fact) string {
	for i := f.Seq; i < len(msgs); i++ {
		for _, c := range msgs[i].ToolCalls {
			if facts.CallText(facts.ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments}) != f.Text {
				continue
			}
			for _, r := range msgs[i+1:] {
				if r.ToolCallID == c.ID && c.ID != "" {
					return plainResult(r.Text())
				}
			}
		}
	}
	return ""
}

// distinctKey is the first key=value of args that no other call of name in the ledger has
// ("" when there is none); a long value cut is its beginning.
func distinctKey(ledger []facts.Fact, name, args string) string {
	for _, kv := range strings.Split(args, ", ") {
		kv = strings.TrimSpace(strings.TrimSuffix(kv, "…"))
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			continue
		}
		n := 0
		for _, f := range ledger {
			if f.Kind == facts.KindToolCall && strings.HasPrefix(f.Text, name+"(") && strings.Contains(f.Text, kv) {
				n++
			}
		}
		if n == 1 {
			return kv
		}
	}
	return ""
}

// plainResult is a tool's result when it is short, on one line and not a JSON object or
// array; else "".
func plainResult(t string) string {
	t = strings.TrimSpace(t)
	if t == "" || len(t) > 80 || strings.ContainsAny(t, "\n{[") {
		return ""
	}
	return t
}

// maxCue is the most words a recall probe's cue has.
const maxCue = 8

// ngrams counts the runs of 2 to maxCue consecutive words of each message, case folded.
func ngrams(msgs []chat.Message) map[string]int {
	out := map[string]int{}
	for _, m := range msgs {
		ws := words(strings.ToLower(messageText(m)))
		for i := range ws {
			for n := 2; n <= maxCue && i+n <= len(ws); n++ {
				out[strings.Join(ws[i:i+n], " ")]++
			}
		}
	}
	return out
}

// countSeq counts the places where ws occurs in ts as consecutive words, case folded.
func countSeq(ts, ws []string) int {
	if len(ws) == 0 {
		return 0
	}
	n := 0
	for i := 0; i+len(ws) <= len(ts); i++ {
		ok := true
		for j, w := range ws {
			if !strings.EqualFold(ts[i+j], w) {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// spread keeps at most max of ps, evenly spread (0: all).
func spread(ps []Probe, max int) []Probe {
	if max <= 0 || len(ps) <= max {
		return ps
	}
	out := make([]Probe, max)
	for i := range max {
		out[i] = ps[i*len(ps)/max]
	}
	return out
}

func historyText(msgs []chat.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(messageText(m) + "\n")
	}
	return b.String()
}

// normalize folds case, spacing and quotes, for exact matches.
func normalize(s string) string {
	r := strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201c", "\"", "\u201d", "\"", "`", "'", "\"", "'")
	return strings.Join(strings.Fields(strings.ToLower(r.Replace(s))), " ")
}

// containsNorm reports whether want, normalised, is in hay (normalised already) on word
// boundaries.
func containsNorm(hay, want string) bool {
	w := normalize(want)
	if w == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(hay[i:], w)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(w)
		if (s == 0 || !isWord(hay[s-1]) || !isWord(w[0])) && (e == len(hay) || !isWord(hay[e]) || !isWord(w[len(w)-1])) {
			return true
		}
		i = s + 1
	}
}

func isWord(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80
}

// Match reports whether an answer is the expected one: equal after normalising case, spacing
// and quotes (and a final full stop).
func Match(expected, given string) bool {
	e, g := normalize(expected), normalize(given)
	return e != "" && strings.TrimSuffix(strings.Trim(e, "'"), ".") == strings.TrimSuffix(strings.Trim(g, "'"), ".")
}
