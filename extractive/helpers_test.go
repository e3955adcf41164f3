package extractive_test

// Helpers shared by the tests of package extractive.

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

// conversationPaths are the recorded conversations of testdata; the test fails without them.
func conversationPaths(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob("../testdata/conversations/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata conversations: %v", err)
	}
	return paths
}

// loadConversation reads a testdata JSONL conversation as transcript messages.
func loadConversation(t *testing.T, path string) []transcript.Message {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []transcript.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			Name       string          `json:"name"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s line %d: %v", path, len(msgs)+1, err)
		}
		tm := transcript.Message{Seq: int64(len(msgs) + 1), Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		var s string
		var parts []struct {
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(m.Content, &s) == nil:
			tm.Text = s
		case json.Unmarshal(m.Content, &parts) == nil:
			for _, p := range parts {
				tm.Text += p.Text
			}
		}
		for _, c := range m.ToolCalls {
			tm.ToolCalls = append(tm.ToolCalls, transcript.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		msgs = append(msgs, tm)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// summarize asks x for a summary of msgs, as the compactor does: the instructions in
// Messages, the conversation in Transcript.
func summarize(t *testing.T, x extractive.Summarizer, msgs []transcript.Message, maxTokens int) llm.Response {
	t.Helper()
	return complete(t, x, llm.Request{MaxTokens: maxTokens, Transcript: msgs, Messages: []llm.Message{
		{Role: "system", Content: "Summarize the conversation below."},
		{Role: "user", Content: transcript.Render(msgs, transcript.Options{})},
	}})
}

// summarizePlain asks x for a summary of a text that is no conversation.
func summarizePlain(t *testing.T, x extractive.Summarizer, input string, maxTokens int) llm.Response {
	t.Helper()
	return complete(t, x, llm.Request{MaxTokens: maxTokens, Messages: []llm.Message{
		{Role: "system", Content: "Summarize the text below."},
		{Role: "user", Content: input},
	}})
}

func complete(t *testing.T, x extractive.Summarizer, req llm.Request) llm.Response {
	t.Helper()
	resp, err := x.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(resp.Text) == "" || resp.FinishReason != "stop" || resp.Model != "extractive" {
		t.Fatalf("response = %+v", resp)
	}
	return resp
}

func firstConversation(t *testing.T) string {
	t.Helper()
	return filepath.Base(conversationPaths(t)[0])
}
