package serve_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
)

// msgs builds messages from "role:text" items; "assistant>id:name" is a tool call.
func msgs(items ...string) []chat.Message {
	var out []chat.Message
	for _, it := range items {
		role, text, _ := strings.Cut(it, ":")
		if r, id, ok := strings.Cut(role, ">"); ok {
			m := chat.Message{Role: r, Content: json.RawMessage("null"),
				ToolCalls: []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: text, Arguments: "{}"}}}}
			out = append(out, m)
			continue
		}
		if r, id, ok := strings.Cut(role, "<"); ok {
			m := chat.TextMessage(r, text)
			m.ToolCallID = id
			out = append(out, m)
			continue
		}
		out = append(out, chat.TextMessage(role, text))
	}
	return out
}

func texts(ms []chat.Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Role+":"+m.Text())
	}
	return strings.Join(s, ",")
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	hist := msgs("system:S", "user:a", "assistant:b", "user:c", "assistant:d")
	threeCalls := msgs("user:a", "assistant>c1:f")
	threeCalls[1].ToolCalls = append(threeCalls[1].ToolCalls, msgs("assistant>c2:g")[0].ToolCalls[0], msgs("assistant>c3:h")[0].ToolCalls[0])
	cases := []struct {
		name      string
		hist, req []chat.Message
		fresh     string // the new messages, when no conflict
		conflict  int    // the request index named, -1: none
		rewrite   bool   // the conflict is a rewrite of the conversation, not another one
	}{
		{"new thread", nil, msgs("system:S", "user:a"), "system:S,user:a", -1, false},
		{"whole history and a turn", hist, msgs("system:S", "user:a", "assistant:b", "user:c", "assistant:d", "user:e"), "user:e", -1, false},
		{"whole history without the system prompt", hist, msgs("user:a", "assistant:b", "user:c", "assistant:d", "user:e"), "user:e", -1, false},
		{"only the new turn", hist, msgs("user:e"), "user:e", -1, false},
		{"system prompt and the new turn", hist, msgs("system:S", "user:e"), "user:e", -1, false},
		{"the last turn resent", hist, msgs("user:c", "assistant:d", "user:e"), "user:e", -1, false},
		{"a retry of the last request", msgs("user:a", "assistant:b", "user:c"), msgs("user:a", "assistant:b", "user:c"), "", -1, false},
		{"an edited first message", hist, msgs("system:S", "user:A", "assistant:b", "user:c", "assistant:d", "user:e"), "", 1, true},
		{"an edited middle message", hist, msgs("system:S", "user:a", "assistant:B", "user:c", "assistant:d", "user:e"), "", 2, true},
		{"another conversation, as long as the history", hist, msgs("user:x", "assistant:y", "user:z"), "", 0, false},
		{"another conversation with other instructions", hist, msgs("system:T", "user:x", "assistant:y"), "", 1, false},
		{"the agent's own compaction after its instructions", hist, msgs("system:S", "user:summary of a to d", "user:e"), "", 1, true},
		{"the agent's own compaction, its instructions first and its other system messages later",
			msgs("system:S", "system:N", "user:env", "user:a", "assistant:b"),
			msgs("system:S", "user:a", "system:N", "user:env", "user:summary of a and b", "user:c"), "", 1, true},
		{"another conversation whose instructions are not the thread's first", msgs("system:S", "system:N", "user:a", "assistant:b"),
			msgs("system:N", "user:x", "assistant:y"), "", 1, false},
		{"a longer list that does not start like the history", hist, msgs("user:x", "assistant:y", "user:z", "assistant:w", "user:v"), "", 0, false},
		{"a changed system prompt", hist, msgs("system:T", "user:e"), "system:T,user:e", -1, false},
		{"a changed system prompt, whole history", hist, msgs("system:T", "user:a", "assistant:b", "user:c", "assistant:d", "user:e"), "system:T,user:e", -1, false},
		{"the changed prompt again, whole history", msgs("system:S", "user:a", "assistant:b", "system:T", "user:c", "assistant:d"),
			msgs("system:T", "user:a", "assistant:b", "user:c", "assistant:d", "user:e"), "user:e", -1, false},
		{"the changed prompt again, only the new turn", msgs("system:S", "user:a", "assistant:b", "system:T", "user:c", "assistant:d"),
			msgs("system:T", "user:e"), "user:e", -1, false},
		{"an edit after a changed prompt", msgs("system:S", "user:a", "assistant:b", "system:T", "user:c", "assistant:d"),
			msgs("system:T", "user:a", "assistant:B", "user:c", "assistant:d", "user:e"), "", 2, true},
		{"a system note mid-conversation, resent", msgs("system:S", "user:a", "system:N", "assistant:b"),
			msgs("system:S", "user:a", "system:N", "assistant:b", "user:c"), "user:c", -1, false},
		{"a repeated first user message, only the new turn", msgs("user:a", "assistant:b"), msgs("user:a"), "user:a", -1, false},
		{"parallel tool results, only the new turn", threeCalls, msgs("tool<c1:1", "tool<c2:2", "tool<c3:3"), "tool:1,tool:2,tool:3", -1, false},
		{"parallel tool results and a reply", threeCalls, msgs("tool<c1:1", "tool<c2:2", "tool<c3:3", "user:more"), "tool:1,tool:2,tool:3,user:more", -1, false},
		{"a regenerate (ends before the stored reply)", hist, msgs("system:S", "user:a", "assistant:b", "user:c"), "", 4, true},
		{"a tool call and its result", msgs("user:a", "assistant>c1:f"), msgs("user:a", "assistant>c1:f", "tool<c1:42"), "tool:42", -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh, c := serve.Reconcile(tc.hist, tc.req)
			if tc.conflict >= 0 {
				if c == nil || c.Index != tc.conflict || c.Rewrite != tc.rewrite {
					t.Fatalf("conflict %+v, want one at message %d, rewrite %v (fresh %q)", c, tc.conflict, tc.rewrite, texts(fresh))
				}
				return
			}
			if c != nil {
				t.Fatalf("conflict: %s", c.Msg)
			}
			if got := texts(fresh); got != tc.fresh {
				t.Fatalf("new messages %q, want %q", got, tc.fresh)
			}
		})
	}
}

// A reply resent as clients serialize it (null fields, text parts, no tool call type) is the
// stored reply, not an edit.
func TestReconcileSameMessage(t *testing.T) {
	t.Parallel()
	var stored, resent chat.Message
	json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}],"refusal":null}`), &stored)
	json.Unmarshal([]byte(`{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"a\":1}"}}],"annotations":[]}`), &resent)
	hist := []chat.Message{chat.TextMessage("user", "hi"), stored}
	if fresh, c := serve.Reconcile(hist, []chat.Message{chat.TextMessage("user", "hi"), resent}); c != nil || len(fresh) != 0 {
		t.Fatalf("the resent reply: %v, %d new", c, len(fresh))
	}
	var parts chat.Message
	json.Unmarshal([]byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}`), &parts)
	if fresh, c := serve.Reconcile(hist, []chat.Message{parts, resent, chat.TextMessage("user", "more")}); c != nil || len(fresh) != 1 {
		t.Fatalf("text parts for a string: %v, %d new", c, len(fresh))
	}
	var args chat.Message
	json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":2}"}}]}`), &args)
	if _, c := serve.Reconcile(hist, []chat.Message{chat.TextMessage("user", "hi"), args, chat.TextMessage("user", "x")}); c == nil || !strings.Contains(c.Msg, "tool calls differ") {
		t.Fatalf("changed arguments: %v", c)
	}
	// The same arguments, other white space and key order: the same call.
	var spaced chat.Message
	json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{ \"a\" : 1.0e0 }"}}]}`), &spaced)
	if fresh, c := serve.Reconcile(hist, []chat.Message{chat.TextMessage("user", "hi"), spaced, chat.TextMessage("user", "x")}); c == nil {
		t.Fatalf("1.0e0 for 1 is another number as written: %d new", len(fresh))
	}
	json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{ \"a\" : 1 }\n"}}]}`), &spaced)
	if fresh, c := serve.Reconcile(hist, []chat.Message{chat.TextMessage("user", "hi"), spaced, chat.TextMessage("user", "x")}); c != nil || len(fresh) != 1 {
		t.Fatalf("arguments with other white space: %v, %d new", c, len(fresh))
	}
	var two, swapped chat.Message
	json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"a\":1,\"b\":[2]}"}}]}`), &two)
	json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"b\": [2], \"a\": 1}"}}]}`), &swapped)
	if fresh, c := serve.Reconcile([]chat.Message{chat.TextMessage("user", "hi"), two}, []chat.Message{chat.TextMessage("user", "hi"), swapped, chat.TextMessage("user", "x")}); c != nil || len(fresh) != 1 {
		t.Fatalf("arguments in another key order: %v, %d new", c, len(fresh))
	}
}
