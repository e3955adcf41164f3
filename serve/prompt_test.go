package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/sashabaranov/go-openai"
)

// TestChangedSystemPrompt: an agent re-run with another system prompt (today's date in it) is
// answered, not refused: the new prompt is stored and pinned, the model gets it, and the
// history keeps both; the next turn with the same new prompt stores only its new message.
func TestChangedSystemPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	c := e.client("p", "k")
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "Today is Monday."}, {Role: "user", Content: "plan my day"}}
	r, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, r.Choices[0].Message, openai.ChatCompletionMessage{Role: "user", Content: "and tomorrow?"})
	msgs[0].Content = "Today is Tuesday."
	for turn := range 2 {
		r, err = c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d with the changed prompt: %v", turn, err)
		}
		var sent bool
		e.up.set(func(u *upstream) {
			for _, m := range u.lastMsgs {
				sent = sent || m.Role == "system" && m.Text() == "Today is Tuesday."
			}
		})
		if !sent {
			t.Fatalf("turn %d: the model did not get the new prompt", turn)
		}
		msgs = append(msgs, r.Choices[0].Message, openai.ChatCompletionMessage{Role: "user", Content: "more"})
	}
	want := []string{"system: Today is Monday.", "user: plan my day", "assistant: reply 1", "system: Today is Tuesday.", "user: and tomorrow?", "assistant: reply 2", "user: more", "assistant: reply 3"}
	got := e.history("p")
	if len(got) != len(want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("history %q, want %q", got, want)
		}
	}
	pins, err := e.store.Pins(ctx, "p")
	if err != nil || len(pins) != 1 || pins[0].Seq != 4 {
		t.Fatalf("pins %+v, %v; want the new prompt (seq 4)", pins, err)
	}
}

// dayPrompt is the system prompt of day n of an agent that puts the date in it.
func dayPrompt(n int) string { return fmt.Sprintf("Today is day %d.", n) }

// dayOf returns the day a text names as dayPrompt writes it, -1 when it names none.
func dayOf(text string) int {
	var n int
	if _, err := fmt.Sscanf(text, "Today is day %d.", &n); err != nil || text != dayPrompt(n) {
		return -1
	}
	return n
}

// lifeFigures are what a life of an agent whose system prompt changes each turn measured.
type lifeFigures struct {
	turns, current, older, refused            int // turns; those whose request held the day's prompt as its system prompt; those holding an older day's as a system prompt; refused
	applied, ineffective, failed, compactions int
	appended                                  int // the tokens of the thread's history
	first                                     string
}

func (f lifeFigures) String() string {
	return fmt.Sprintf("current day's prompt the system prompt at %d/%d turns, an older day's as a system prompt at %d, refused at %d; %d compactions (%d applied, %d ineffective, %d failed) for %d appended tokens; first failure: %s",
		f.current, f.turns, f.older, f.refused, f.compactions, f.applied, f.ineffective, f.failed, f.appended, f.first)
}

// compactionBound is the most compactions a life that appended tokens may take at limit: one
// per quarter of the limit appended, and two more.
func compactionBound(appended, limit int) int {
	return (appended+limit/4-1)/(limit/4) + 2
}

// countCompactions adds the thread's compaction reports to f, and its history's tokens.
func countCompactions(t *testing.T, store *memory.Store, thread string, f *lifeFigures) {
	t.Helper()
	ctx := context.Background()
	reps, err := store.Reports(ctx, thread, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		switch r.Status {
		case memory.StatusApplied, memory.StatusReverted:
			f.applied++
		case memory.StatusIneffective:
			f.ineffective++
		case memory.StatusFailed:
			f.failed++
		}
	}
	f.compactions = len(reps)
	h, err := store.History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		f.appended += e.Tokens
	}
}

// promptLife is the life of an agent through Chat Completions at limit: on day n (from 0) it
// sends prompt(n) as its system prompt, then its conversation and a new user message. It
// measures what the upstream got as the system prompt each turn (the leading system messages,
// the summary left out), and the thread's compactions.
func promptLife(t *testing.T, limit, turns int, prompt func(day int) string) lifeFigures {
	t.Helper()
	e := newEnv(t, envOptions{limit: limit})
	path := "/t/days/v1/chat/completions"
	var conv []chat.Message // the conversation, without the system prompt
	f := lifeFigures{turns: turns}
	for day := 0; day < turns; day++ {
		e.srv.WaitBackground()
		conv = append(conv, chat.TextMessage("user", "What should I do next? "+strings.Repeat("Tell me in plain words, please. ", 5)))
		msgs := append([]chat.Message{chat.TextMessage("system", prompt(day))}, conv...)
		code, body, _ := e.post(path, turnBody(t, msgs))
		if code != http.StatusOK {
			f.refused++
			if f.first == "" {
				f.first = fmt.Sprintf("day %d: %d %s", day, code, body)
			}
			break
		}
		conv = append(conv, replyOf(t, body))
		var sys []string
		older := false
		e.up.set(func(u *upstream) {
			for i, m := range u.lastMsgs {
				if m.Role != "system" && m.Role != "developer" {
					continue
				}
				if i == len(sys) && !strings.HasPrefix(m.Text(), "Summary of the earlier conversation") {
					sys = append(sys, m.Text())
				}
				if i > 0 && dayOf(m.Text()) >= 0 {
					older = true // a day's prompt that is not the system prompt, or a second one
				}
			}
		})
		switch {
		case len(sys) == 1 && sys[0] == prompt(day):
			f.current++
		case f.first == "":
			f.first = fmt.Sprintf("day %d: the upstream's system prompt %q", day, sys)
		}
		if older {
			f.older++
			if f.first == "" {
				f.first = fmt.Sprintf("day %d: the upstream got another day's prompt among its messages", day)
			}
		}
	}
	e.srv.WaitBackground()
	countCompactions(t, e.store, "days", &f)
	return f
}

// TestChangingPromptLife: an agent whose system prompt says the date ("Today is day N"), a new
// one each turn, through 200 turns at a limit that forces compactions. Every request the
// upstream gets has the day's prompt as its system prompt, exactly once, and no older day's
// among its messages; the superseded prompts are summarized like other messages, not pinned,
// so the thread compacts once per quarter of the limit appended at most, not each turn, and
// no more often than the same life with a prompt that never changes.
func TestChangingPromptLife(t *testing.T) {
	t.Parallel()
	const limit, turns = 1000, 200
	f := promptLife(t, limit, turns, dayPrompt)
	same := promptLife(t, limit, turns, func(int) string { return dayPrompt(0) })
	t.Logf("changing prompt: %v", f)
	t.Logf("the same prompt every day: %v", same)
	if f.current != turns || f.older != 0 || f.refused != 0 {
		t.Errorf("%v", f)
	}
	if bound := compactionBound(f.appended, limit); f.compactions > bound || f.ineffective > 0 || f.failed > 0 || f.applied == 0 {
		t.Errorf("%d compactions (%d ineffective, %d failed), want some, within %d and none ineffective: %v", f.compactions, f.ineffective, f.failed, bound, f)
	}
}

// TestChangedPromptWithToolResult: a prompt that changes in the turn that answers the model's
// tool call (Claude Code changes its prompt between its first and second turn) is stored
// after the result, the call answered first, and leads what the model gets; the next turn
// with it stores only its new message.
func TestChangedPromptWithToolResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	e.up.set(func(u *upstream) {
		u.reply = func(n int, msgs []chat.Message) chat.Message {
			if n == 1 {
				m := chat.TextMessage("assistant", "")
				m.ToolCalls = []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "ls", Arguments: "{}"}}}
				return m
			}
			return chat.TextMessage("assistant", fmt.Sprintf("reply %d", n))
		}
	})
	path := "/t/calls/v1/chat/completions"
	msgs := []chat.Message{chat.TextMessage("system", "Prompt A."), chat.TextMessage("user", "list the files")}
	code, body, _ := e.post(path, turnBody(t, msgs))
	if code != http.StatusOK {
		t.Fatalf("turn 1: %d %s", code, body)
	}
	res := chat.TextMessage("tool", "a.go b.go")
	res.ToolCallID = "c1"
	msgs = append(msgs, replyOf(t, body), res)
	msgs[0] = chat.TextMessage("system", "Prompt B.")
	for turn := 2; turn <= 3; turn++ {
		code, body, _ = e.post(path, turnBody(t, msgs))
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, code, body)
		}
		var got []string
		e.up.set(func(u *upstream) {
			for _, m := range u.lastMsgs {
				got = append(got, m.Role+": "+m.Text())
			}
		})
		if got[0] != "system: Prompt B." || slices.Contains(got, "system: Prompt A.") || slices.Index(got[1:], "system: Prompt B.") >= 0 {
			t.Fatalf("turn %d: the upstream got %q, want Prompt B first and alone", turn, got)
		}
		msgs = append(msgs, replyOf(t, body), chat.TextMessage("user", "thanks"))
	}
	want := []string{"system: Prompt A.", "user: list the files", "assistant:  [call c1 ls {}]", "tool: a.go b.go", "system: Prompt B.", "assistant: reply 2", "user: thanks", "assistant: reply 3"}
	if got := e.history("calls"); !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	pins, err := e.store.Pins(ctx, "calls")
	if err != nil || len(pins) != 1 || pins[0].Seq != 5 {
		t.Fatalf("pins %+v, %v; want the new prompt (seq 5)", pins, err)
	}
}

// TestPromptBackToEarlier: an agent back on a prompt it sent before (A, then B, then A again)
// has A lead what the model gets, not B: the prompt sent last is the current one, whatever
// the history holds.
func TestPromptBackToEarlier(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	path := "/t/back/v1/chat/completions"
	var conv []chat.Message
	for turn, prompt := range []string{"Prompt A.", "Prompt B.", "Prompt A.", "Prompt A."} {
		conv = append(conv, chat.TextMessage("user", fmt.Sprintf("question %d", turn)))
		code, body, _ := e.post(path, turnBody(t, append([]chat.Message{chat.TextMessage("system", prompt)}, conv...)))
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, code, body)
		}
		conv = append(conv, replyOf(t, body))
		var sys []string
		e.up.set(func(u *upstream) {
			for _, m := range u.lastMsgs {
				if m.Role == "system" {
					sys = append(sys, m.Text())
				}
			}
		})
		if len(sys) != 1 || sys[0] != prompt {
			t.Fatalf("turn %d: the upstream's system messages %q, want %q alone", turn, sys, prompt)
		}
	}
	want := []string{"system: Prompt A.", "user: question 0", "assistant: reply 1", "system: Prompt B.", "user: question 1", "assistant: reply 2",
		"system: Prompt A.", "user: question 2", "assistant: reply 3", "user: question 3", "assistant: reply 4"}
	if got := e.history("back"); !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}
