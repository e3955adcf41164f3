package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
)

// recallModel is a fake model that, when the conversation holds no recall result yet, calls
// memory_search for LQ940Q, and otherwise answers with what the result said of it.
func recallModel(_ int, msgs []chat.Message) chat.Message {
	for _, m := range msgs {
		if m.Role == chat.RoleTool && strings.HasPrefix(m.ToolCallID, serve.RecallPrefix) {
			found := strings.Contains(m.Text(), `\"origin\": \"SFO\"`)
			return chat.TextMessage("assistant", fmt.Sprintf("Reservation LQ940Q: origin SFO found in the archive: %v.", found))
		}
	}
	return chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
		Function: chat.FunctionCall{Name: serve.RecallTool, Arguments: `{"query": "LQ940Q"}`}}}}
}

// TestRecall: with recall on, an agent whose model calls memory_search for an id compaction
// moved out of the context gets its answer in one response, streamed or not; the thread
// stores the recall turn once, as the proxy's own, and the agent's next resend, which lacks
// it, is no conflict.
func TestRecall(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Recall = true }})
			importAirline(t, e)
			e.up.set(func(u *upstream) { u.reply = recallModel })
			agent := readConversation(t)
			agent = append(agent, chat.TextMessage("user", "Where did reservation LQ940Q start?"))

			answer := ask(t, e, agent, stream)
			if !strings.Contains(answer.Text(), "origin SFO found in the archive: true") || len(answer.ToolCalls) != 0 {
				t.Fatalf("the agent's answer: %+v", answer)
			}
			hist, err := e.store.History(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			recalls := 0
			for _, h := range hist {
				if serve.IsRecall(h.Message) {
					recalls++
				}
			}
			if len(hist) != len(agent)+3 || recalls != 2 || hist[len(hist)-1].Message.Text() != answer.Text() {
				t.Fatalf("the thread holds %d messages (%d of the proxy's), want %d (2), ending with the answer", len(hist), recalls, len(agent)+3)
			}
			n, _ := e.up.stats()
			if n != 2 {
				t.Fatalf("%d upstream requests, want 2 (the call, then the answer)", n)
			}
			var tools []chat.Tool
			json.Unmarshal(e.up.bodies[0]["tools"], &tools)
			if len(tools) != 1 || tools[0].Function.Name != serve.RecallTool || string(e.up.bodies[0]["stream"]) != "false" {
				t.Fatalf("the first upstream request: tools %s, stream %s", e.up.bodies[0]["tools"], e.up.bodies[0]["stream"])
			}

			// The agent's next turn resends its own history, without the recall turn.
			agent = append(agent, answer, chat.TextMessage("user", "Thanks."))
			e.up.set(func(u *upstream) { u.reply = nil })
			ask(t, e, agent, stream)
		})
	}
}

// TestRecallOffByDefault: without serve.recall the model gets the agent's tools only.
func TestRecallOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	importAirline(t, e)
	agent := append(readConversation(t), chat.TextMessage("user", "Where did reservation LQ940Q start?"))
	ask(t, e, agent, false)
	if _, ok := e.up.bodies[0]["tools"]; ok {
		t.Fatalf("tools sent without recall: %s", e.up.bodies[0]["tools"])
	}
}

func readConversation(t *testing.T) []chat.Message {
	t.Helper()
	data, err := os.ReadFile("../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []chat.Message
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var m chat.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// ask sends the agent's messages to thread t and returns the answer's message (assembled
// from the deltas of a stream), failing on any status but 200.
func ask(t *testing.T, e *env, msgs []chat.Message, stream bool) chat.Message {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "stream": stream})
	code, resp, _ := e.post("/t/t/v1/chat/completions", string(body))
	if code != http.StatusOK {
		t.Fatalf("chat: %d %s", code, resp)
	}
	if !stream {
		var c struct {
			Choices []struct {
				Message chat.Message `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(resp), &c); err != nil || len(c.Choices) == 0 {
			t.Fatalf("chat: %v %s", err, resp)
		}
		return c.Choices[0].Message
	}
	if !strings.HasSuffix(strings.TrimSpace(resp), "data: [DONE]") {
		t.Fatalf("the stream does not end with [DONE]: %s", resp)
	}
	var text strings.Builder
	for line := range strings.SplitSeq(resp, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string            `json:"content"`
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			if len(ch.Delta.ToolCalls) > 0 {
				t.Fatalf("the stream calls a tool: %s", data)
			}
		}
	}
	return chat.TextMessage("assistant", text.String())
}
