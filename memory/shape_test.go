package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestMessageShapes: the shapes OpenAI's chat completions API rejects are rejected at import,
// naming the line, the message and the field, with nothing written; the shapes it accepts
// (content null beside tool calls, tool_calls null, parts of any type) are kept.
func TestMessageShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	call := `"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]`
	bad := []struct {
		name, in, field, msg string
	}{
		{"user without content", `{"role":"user"}`, "content", "missing"},
		{"user with null content", `{"role":"user","content":null}`, "content", "null"},
		{"system with null content", `{"role":"system","content":null}`, "content", "null"},
		{"tool without content", `{"role":"assistant","content":null,` + call + "}\n" + `{"role":"tool","tool_call_id":"c1"}`, "content", "missing"},
		{"assistant with neither content nor calls", `{"role":"assistant"}`, "content", "calls no tool"},
		{"assistant with null content and null calls", `{"role":"assistant","content":null,"tool_calls":null}`, "content", "calls no tool"},
		{"assistant with null content and an empty refusal", `{"role":"assistant","content":null,"refusal":""}`, "content", "no refusal"},
		{"parts that are numbers", `{"role":"user","content":[1,2,3]}`, "content[0]", "not a content part"},
		{"part without type", `{"role":"user","content":[{"text":"a"}]}`, "content[0].type", "missing"},
		{"text part without text", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}`, "content[1].text", "string text"},
		{"empty parts", `{"role":"user","content":[]}`, "content", "empty array"},
		{"empty tool_calls", `{"role":"assistant","content":"a","tool_calls":[]}`, "tool_calls", "empty array"},
		{"empty tool_calls on a user", `{"role":"user","content":"a","tool_calls":[]}`, "tool_calls", "cannot call tools"},
		{"legacy function_call", `{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}`, "function_call", "use tool_calls"},
		{"legacy function_call beside content", `{"role":"assistant","content":"a","function_call":{"name":"f","arguments":"{}"}}`, "function_call", "legacy"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			if _, err := s.Import(ctx, "t", strings.NewReader(`{"role":"user","content":"first"}`), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := s.Import(ctx, "t", strings.NewReader(tc.in), memory.AppendOptions{})
			var ie *memory.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			lines := strings.Count(tc.in, "\n") + 1
			if ie.Field != tc.field || ie.Line != lines || ie.Index != lines-1 || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v (line %d, index %d, field %q); want line %d, index %d, field %q saying %q", err, ie.Line, ie.Index, ie.Field, lines, lines-1, tc.field, tc.msg)
			}
			if hist, err := s.History(ctx, "t"); err != nil || len(hist) != 1 {
				t.Fatalf("history has %d messages after a rejected import (%v), want 1", len(hist), err)
			}
			// Nor is a new thread created by it.
			if _, err := s.Import(ctx, "u", strings.NewReader(tc.in), memory.AppendOptions{}); !errors.As(err, &ie) {
				t.Fatalf("new thread: got %v", err)
			}
			if _, err := s.Thread(ctx, "u"); !errors.Is(err, memory.ErrThreadNotFound) {
				t.Fatal("a rejected import created its thread")
			}
		})
	}
	good := []string{
		`{"role":"assistant","content":null,` + call + "}\n" + `{"role":"tool","tool_call_id":"c1","content":"r"}`,
		`{"role":"assistant",` + call + "}\n" + `{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}`,
		`{"role":"user","content":"a","tool_calls":null}`,
		`{"role":"user","content":""}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`,
		`{"role":"assistant","content":"a","function_call":null}`,
		`{"role":"assistant","content":null,"refusal":"I can't help with that."}`,
		`{"role":"assistant","refusal":"I can't help with that."}`,
	}
	for _, in := range good {
		s, _ := storetest.Open(t)
		if _, err := s.Import(ctx, "t", strings.NewReader(in), memory.AppendOptions{}); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// TestAppendChecksShapes: Append, the library's way in, refuses the same shapes.
func TestAppendChecksShapes(t *testing.T) {
	t.Parallel()
	s, _ := storetest.Open(t)
	_, err := s.Append(context.Background(), "t", []chat.Message{chat.TextMessage("user", "a"), {Role: "user"}}, memory.AppendOptions{})
	var ie *memory.InputError
	if !errors.As(err, &ie) || ie.Index != 1 || ie.Field != "content" {
		t.Fatalf("got %v, want message 1: content", err)
	}
}
