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
	for _, f := range facts.Extract([]facts.Message{{Role: role, Content: text}}) {
		if f.Kind != k {
			continue
		}
		if i := strings.Index(text[pos:], f.Text); i >= 0 && (at < 0 || i < at) {
			best, at = f.Text, i
		}
	}
	return best
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
	// Else the line that holds the most cue words, at least two of them or one that is a
	// value itself (it has a digit or an underscore): the first value of the kind after the
	// last of them.
	cues := map[string]bool{}
	for _, w := range append(words(q.After), words(q.Begins)...) {
		if len(w) > 2 || strings.ContainsAny(w, "0123456789_") {
			cues[strings.ToLower(w)] = true
		}
	}
	best, bestScore := "", 0
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, line := range strings.Split(messageText(msgs[i]), "\n") {
			score, strong, last := 0, false, -1
			for _, sp := range wordSpans(line) {
				w := strings.ToLower(line[sp[0]:sp[1]])
				if cues[w] {
					score++
					strong = strong || strings.ContainsAny(w, "0123456789_")
					last = sp[1]
				}
			}
			if score <= bestScore || (score < 2 && !strong) {
				continue
			}
			if v := valueAfter(line, msgs[i].Role, last, q.Want); v != "" {
				best, bestScore = v, score
			}
		}
	}
	return best
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
