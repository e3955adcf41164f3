package serve_test

import (
	"context"
	"testing"

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
