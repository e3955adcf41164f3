package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
)

// An Answerer answers a question from a context: the messages sent with it. It never sees the
// expected answer.
type Answerer interface {
	Answer(ctx context.Context, context []chat.Message, q Question) (string, error)
}

// Lookup is the built-in answerer: deterministic and offline, it finds the kind of value asked
// next to the question's cue words in its context (the quoted message beginning, the words
// before the value, the call's name and key).
type Lookup struct{}

// Answer answers q from msgs.
func (Lookup) Answer(_ context.Context, msgs []chat.Message, q Question) (string, error) {
	switch q.Kind {
	case KindRecall:
		return lookupRecall(msgs, q), nil
	case KindArtifact:
		return lookupArtifact(msgs, q), nil
	case KindConstraint:
		return lookupConstraint(msgs, q), nil
	case KindContinuation:
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == chat.RoleUser {
				return strings.TrimSpace(msgs[i].Text()), nil
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("eval: unknown probe kind %q", q.Kind)
}

// startsWith finds the messages whose text begins with begins.
func startsWith(msgs []chat.Message, begins string) []chat.Message {
	var out []chat.Message
	b := normalize(begins)
	for _, m := range msgs {
		if b != "" && strings.HasPrefix(normalize(messageText(m)), b) {
			out = append(out, m)
		}
	}
	return out
}

// valueAfter is the value of kind k that comes first in text at or after byte pos, of the
// facts extracted from the whole text as said by role (a JSON document is read as one).
func valueAfter(text, role string, pos int, k facts.Kind) string {
	best, at := "", -1
	for _, f := range facts.Extract([]facts.Message{{Role: readAs(role), Content: text}}) {
		if f.Kind != k {
			continue
		}
		if i := strings.Index(text[pos:], f.Text); i >= 0 && (at < 0 || i < at) {
			best, at = f.Text, i
		}
	}
	return best
}

// readAs is the role whose values the facts ledger reads in a message of role: a system
// message (a compaction's summary) as a tool's output, since the ledger skips the system
// prompt.
func readAs(role string) string {
	if role == chat.RoleSystem || role == "developer" {
		return chat.RoleTool
	}
	return role
}

// afterCue is where the cue words end in text: the words of cue, case folded, as consecutive
// words of text (anything but words between them).
func afterCue(text, cue string) (int, bool) {
	ws := words(cue)
	if len(ws) == 0 {
		return 0, false
	}
	spans := wordSpans(text)
	for i := 0; i+len(ws) <= len(spans); i++ {
		ok := true
		for j, w := range ws {
			sp := spans[i+j]
			if !strings.EqualFold(text[sp[0]:sp[1]], w) {
				ok = false
				break
			}
		}
		if ok {
			return spans[i+len(ws)-1][1], true
		}
	}
	return 0, false
}

// wordSpans are the byte spans of the words of s (as words reads them).
func wordSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

func lookupRecall(msgs []chat.Message, q Question) string {
	// The message itself, kept verbatim.
	for _, m := range startsWith(msgs, q.Begins) {
		text := messageText(m)
		if p, ok := afterCue(text, q.After); ok {
			if v := valueAfter(text, m.Role, p, q.Want); v != "" {
				return v
			}
		}
	}
	// Else a line of the context (a summary's) with the words before the value.
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, line := range strings.Split(messageText(msgs[i]), "\n") {
			if p, ok := afterCue(line, q.After); ok {
				if v := valueAfter(line, msgs[i].Role, p, q.Want); v != "" {
					return v
				}
			}
		}
	}
	// Else the value of the kind asked that the question's cue words stand nearest before,
	// anywhere in the context: a summary's tool call (user_id=omar_davis_3817), a quoted
	// line, a list that follows the values the cue names.
	return nearestCued(msgs, q)
}

// The weights of a recall probe's cue words: the words just before the value count more
// than those of the message's beginning, and a word that is a value itself (it has a digit)
// more than a plain one.
const (
	weightAfter  = 3
	weightBegins = 1
	weightValue  = 2 // times the weight of a cue word that has a digit
	// cueWindow is how many words before a value its cue words are looked for.
	cueWindow = 12
	// afterReach is how close before a value one word of the After cue must be.
	afterReach = 4
	// minCued is the least score a value needs to be answered: one word of the cue just
	// before it, or several near it.
	minCued = 3
)

// stopWords are not cue words: they stand before any value.
var stopWords = map[string]bool{"is": true, "it": true, "my": true, "me": true, "to": true, "of": true,
	"in": true, "on": true, "at": true, "an": true, "or": true, "if": true, "as": true, "be": true, "by": true,
	"we": true, "do": true, "so": true, "no": true, "up": true, "us": true, "am": true, "the": true, "and": true, "you": true, "your": true, "for": true, "with": true,
	"can": true, "are": true, "was": true, "this": true, "that": true, "have": true, "has": true, "from": true,
	"but": true, "not": true, "its": true, "our": true, "will": true, "would": true, "could": true, "please": true}

// cueWord is how a word counts as a cue: lower case, a plural's s cut ("reservations").
func cueWord(w string) string {
	w = strings.ToLower(w)
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w = w[:len(w)-1]
	}
	return w
}

// cueWeights are the cue words of q with their weights.
func cueWeights(q Question) map[string]float64 {
	out := map[string]float64{}
	add := func(text string, weight float64) {
		for _, w := range strings.FieldsFunc(text, notAlnum) {
			digit := strings.ContainsAny(w, "0123456789")
			if !digit && (len(w) < 2 || stopWords[strings.ToLower(w)]) {
				continue
			}
			wt := weight
			if digit {
				wt *= weightValue
			}
			w = cueWord(w)
			out[w] = max(out[w], wt)
		}
	}
	add(q.Begins, weightBegins)
	add(q.After, weightAfter)
	return out
}

func notAlnum(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r)) }

// alnumSpans are the byte spans of the runs of letters and digits of s (an underscore
// separates: user_id is user and id).
func alnumSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		in := !notAlnum(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// nearestCued is the value of the kind q asks that has the most of q's cue words close before
// it in one message of msgs (the earliest on a tie), or "" when none has minCued. A value
// the question itself quotes is never the answer.
func nearestCued(msgs []chat.Message, q Question) string {
	cues := cueWeights(q)
	quoted := normalize(q.Text)
	best, bestScore := "", float64(minCued)-1e-9
	for _, m := range msgs {
		text := messageText(m)
		var spans, lists [][2]int
		var toks []string
		for _, f := range facts.Extract([]facts.Message{{Role: readAs(m.Role), Content: text}}) {
			if f.Kind != q.Want || containsNorm(quoted, f.Text) {
				continue
			}
			if spans == nil {
				lists = bareLists(text)
				spans = alnumSpans(text)
				toks = make([]string, len(spans))
				for i, sp := range spans {
					if !inRanges(lists, sp[0]) {
						toks[i] = cueWord(text[sp[0]:sp[1]])
					}
				}
			}
			for _, pos := range occurrences(text, f.Text) {
				if inRanges(lists, pos) {
					continue
				}
				if sc := cueScore(spans, toks, pos, cues); sc > bestScore {
					best, bestScore = f.Text, sc
				}
			}
		}
	}
	return best
}

// bareLists are the byte spans of the lines of text that list values under a label and
// nothing else ("- IDs: HAT028; HAT277; X7BYG1", a summary's key facts): a value there has no
// words of its own, and its neighbours are no cue, since such a list keeps no order of the
// messages.
func bareLists(text string) [][2]int {
	var out [][2]int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		line := strings.TrimLeft(text[start:end], " \t-*•")
		if label, rest, ok := strings.Cut(line, ": "); ok && len(words(label)) <= 4 && !strings.ContainsAny(label, "0123456789(=") {
			items := strings.Split(rest, ";")
			bare := len(items) >= 2
			for _, it := range items {
				bare = bare && len(strings.Fields(it)) <= 2
			}
			if bare {
				out = append(out, [2]int{start, end})
			}
		}
		start = end + 1
	}
	return out
}

func inRanges(rs [][2]int, pos int) bool {
	for _, r := range rs {
		if pos >= r[0] && pos < r[1] {
			return true
		}
	}
	return false
}

// cueScore is the score of a value at byte pos: each cue word among the cueWindow words
// before it counts its weight, less the farther its nearest place is. A value with no word
// of the probe's After cue among the afterReach words just before it scores 0.
func cueScore(spans [][2]int, toks []string, pos int, cues map[string]float64) float64 {
	end := 0 // the words that end before pos
	for end < len(spans) && spans[end][1] <= pos {
		end++
	}
	seen := map[string]bool{}
	score, near := 0.0, false
	for d := 0; d < cueWindow && end-1-d >= 0; d++ {
		w := toks[end-1-d]
		if wt, ok := cues[w]; ok && !seen[w] {
			seen[w] = true
			score += wt / (1 + float64(d)/3)
			near = near || (d < afterReach && wt >= weightAfter)
		}
	}
	if !near {
		return 0
	}
	return score
}

// occurrences are the byte offsets of v in text, on word boundaries.
func occurrences(text, v string) []int {
	var out []int
	for i := 0; v != ""; {
		j := strings.Index(text[i:], v)
		if j < 0 {
			break
		}
		s, e := i+j, i+j+len(v)
		if (s == 0 || !isWord(lower(text[s-1])) || !isWord(lower(v[0]))) && (e == len(text) || !isWord(lower(text[e])) || !isWord(lower(v[len(v)-1]))) {
			out = append(out, s)
		}
		i = s + 1
	}
	return out
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// outcomeOf is what the tool result says of a call, as the facts ledger reads it.
func outcomeOf(call, result chat.Message) string {
	for _, f := range facts.Extract(toFacts([]chat.Message{call, result})) {
		if f.Kind == facts.KindToolCall && f.Outcome != "" {
			return f.Outcome
		}
	}
	return ""
}

func lookupArtifact(msgs []chat.Message, q Question) string {
	k, v, _ := strings.Cut(q.Key, "=")
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Function.Name != q.Call || !strings.Contains(c.Function.Arguments, k) || !strings.Contains(c.Function.Arguments, v) {
				continue
			}
			for _, r := range msgs[i+1:] {
				if r.ToolCallID == c.ID && c.ID != "" {
					one := m
					one.ToolCalls = []chat.ToolCall{c}
					if t := plainResult(r.Text()); t != "" {
						return t
					}
					return outcomeOf(one, r)
				}
			}
		}
	}
	// Else a line of a summary naming the call with its key (a long value cut: its beginning):
	// what follows the call.
	if len(v) > 24 {
		v = v[:24]
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, line := range strings.Split(msgs[i].Text(), "\n") {
			if !strings.Contains(line, q.Call) || !strings.Contains(line, v) {
				continue
			}
			for _, sep := range []string{"→", "->", "=>", " returned ", ": "} {
				if _, rest, ok := strings.Cut(line[strings.Index(line, q.Call):], sep); ok {
					rest = strings.TrimSpace(rest)
					if w := strings.Fields(rest); len(w) > 0 && strings.EqualFold(strings.Trim(w[0], ".,;()"), "ok") {
						return "ok"
					}
					return strings.TrimRight(rest, " .")
				}
			}
		}
	}
	return ""
}

func lookupConstraint(msgs []chat.Message, q Question) string {
	for _, m := range startsWith(msgs, q.Begins) {
		for _, f := range facts.Extract([]facts.Message{{Role: chat.RoleUser, Content: m.Text()}}) {
			if f.Kind == facts.KindConstraint {
				return f.Text
			}
		}
	}
	// Else a constraint of a summary line that shares the most words with the beginning.
	cue := map[string]bool{}
	for _, w := range words(strings.ToLower(q.Begins)) {
		if len(w) > 3 {
			cue[w] = true
		}
	}
	best, score := "", 1
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, line := range strings.Split(msgs[i].Text(), "\n") {
			line = unlabel(strings.TrimLeft(strings.TrimSpace(line), "-*• "))
			for _, f := range facts.Extract([]facts.Message{{Role: chat.RoleUser, Content: line}}) {
				if f.Kind != facts.KindConstraint {
					continue
				}
				n := 0
				for _, w := range words(strings.ToLower(f.Text)) {
					if cue[w] {
						n++
					}
				}
				if n > score {
					best, score = f.Text, n
				}
			}
		}
	}
	return best
}

// Remote answers through an OpenAI-compatible chat completions endpoint: the context's
// messages, then the question as a user message.
type Remote struct {
	BaseURL string // ends in /v1
	Model   string
	APIKey  string // never logged
	Client  *http.Client
}

// Answer posts the context and the question and returns the reply's text.
func (r Remote) Answer(ctx context.Context, msgs []chat.Message, q Question) (string, error) {
	body, err := json.Marshal(map[string]any{"model": r.Model, "temperature": 0,
		"messages": RequestMessages(msgs, q)})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("eval: answering model: %s: %s", resp.Status, oneLine(string(data), 200))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("eval: answering model: reply is not a chat completion: %w", err)
	}
	if len(out.Choices) == 0 {
		return "", errors.New("eval: answering model: reply has no choices")
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}

// RequestMessages are the messages sent with a question: the context, then the question.
func RequestMessages(msgs []chat.Message, q Question) []chat.Message {
	out := append([]chat.Message(nil), msgs...)
	return append(out, questionMessage(q))
}

func questionMessage(q Question) chat.Message {
	return chat.TextMessage(chat.RoleUser, q.Text+" Reply with the exact value only.")
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// unlabel strips a summary line's label ("Goal: ", "The user said: ") and the quotes around
// what follows it.
func unlabel(line string) string {
	if label, rest, ok := strings.Cut(line, ": "); ok && len(words(label)) <= 4 && !strings.ContainsAny(label, ".?!\"") {
		line = rest
	}
	return strings.Trim(strings.TrimSpace(line), "\"'“”")
}
