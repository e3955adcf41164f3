package facts

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const convDir = "../testdata/conversations"

// loadConversation reads an OpenAI chat .jsonl file into Messages.
func loadConversation(t testing.TB, name string) []Message {
	t.Helper()
	f, err := os.Open(filepath.Join(convDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		msgs = append(msgs, parseMessageLine(t, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

type rawMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	Name       string  `json:"name"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (r rawMessage) message() Message {
	m := Message{Role: r.Role, Name: r.Name, ToolCallID: r.ToolCallID}
	if r.Content != nil {
		m.Content = *r.Content
	}
	for _, tc := range r.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return m
}

func parseMessageLine(t testing.TB, line []byte) Message {
	t.Helper()
	var r rawMessage
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("bad message line: %v", err)
	}
	return r.message()
}

// conversationFiles are the recorded conversations in testdata.
var conversationFiles = []string{
	"sweagent_marshmallow1867_function_calling.jsonl",
	"tau_bench_airline_gpt4o_task13_trial2_success.jsonl",
	"tau_bench_airline_gpt4o_task2_trial1.jsonl",
}

// collectAll reads msgs into c in one sequential pass.
func collectAll(c *collector, msgs []Message) {
	collect(c, func(i int) Message { return msgs[i] }, 0, len(msgs))
}
