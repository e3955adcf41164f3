package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ContextWindowMessage is the message of OpenAI's context_length_exceeded error on the
// Responses API.
const ContextWindowMessage = "Your input exceeds the context window of this model. Please adjust your input and try again."

// NewResponses starts a fake OpenAI Responses API. Routes: POST .../responses (streaming when
// the body has "stream": true, else JSON); anything else 404 with OpenAI's error body. A
// prompt over the window is refused with 400 {"error": {"message": ContextWindowMessage,
// "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}.
// Usage: input_tokens is the whole prompt, input_tokens_details.cached_tokens the prefix of
// the body shared with the previous model request answered (bytes/4).
func NewResponses(opts Options) *Fake {
	return newFake(opts, (*Fake).responses)
}

func openaiError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (f *Fake) responses(w http.ResponseWriter, r Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.Path, "/responses") {
		openaiError(w, http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.Path))
		return
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		openaiError(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	if n := Tokens(r.Body); f.opts.Window > 0 && n > f.opts.Window {
		openaiError(w, http.StatusBadRequest, "invalid_request_error", "input", "context_length_exceeded", ContextWindowMessage)
		return
	}
	reply, n, prompt, cached := f.next(r)
	if reply.Raw != nil {
		writeRaw(w, reply.Raw)
		return
	}
	var items []map[string]any
	if reply.Thinking != "" {
		items = append(items, map[string]any{"id": fmt.Sprintf("rs_fake%d", n), "type": "reasoning",
			"summary":           []any{map[string]any{"type": "summary_text", "text": reply.Thinking}},
			"encrypted_content": fmt.Sprintf("fake-encrypted-%d", n)})
	}
	if reply.Text != "" || reply.Tool == nil {
		items = append(items, map[string]any{"id": fmt.Sprintf("msg_fake%d", n), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	if t := reply.Tool; t != nil {
		id := t.ID
		if id == "" {
			id = fmt.Sprintf("call_fake%d", n)
		}
		items = append(items, map[string]any{"id": fmt.Sprintf("fc_fake%d", n), "type": "function_call", "status": "completed",
			"call_id": id, "name": t.Name, "arguments": t.Input})
	}
	out := outTokens(reply)
	resp := map[string]any{
		"id": fmt.Sprintf("resp_fake%d", n), "object": "response", "created_at": 1700000000 + n, "status": "completed",
		"model": f.model(body), "output": items, "error": nil, "incomplete_details": nil,
		"usage": map[string]any{
			"input_tokens": prompt, "input_tokens_details": map[string]any{"cached_tokens": cached},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": prompt + out,
		},
	}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s := startSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		s.event(typ, fields)
	}
	pending := map[string]any{}
	for k, v := range resp {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"] = "in_progress", []any{}, nil
	ev("response.created", map[string]any{"response": pending})
	ev("response.in_progress", map[string]any{"response": pending})
	for i, it := range items {
		id := it["id"]
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch it["type"] {
		case "reasoning":
			added["summary"] = []any{}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			at := map[string]any{"item_id": id, "output_index": i, "summary_index": 0}
			part := func(text string) map[string]any { return map[string]any{"type": "summary_text", "text": text} }
			ev("response.reasoning_summary_part.added", with(at, "part", part("")))
			for _, c := range chunks(reply.Thinking, 16) {
				ev("response.reasoning_summary_text.delta", with(at, "delta", c))
			}
			ev("response.reasoning_summary_text.done", with(at, "text", reply.Thinking))
			ev("response.reasoning_summary_part.done", with(at, "part", part(reply.Thinking)))
		case "message":
			added["content"] = []any{}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			at := map[string]any{"item_id": id, "output_index": i, "content_index": 0}
			part := func(text string) map[string]any {
				return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
			}
			ev("response.content_part.added", with(at, "part", part("")))
			for _, c := range chunks(reply.Text, 16) {
				ev("response.output_text.delta", with(at, "delta", c))
			}
			ev("response.output_text.done", with(at, "text", reply.Text))
			ev("response.content_part.done", with(at, "part", part(reply.Text)))
		default:
			added["arguments"] = ""
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			at := map[string]any{"item_id": id, "output_index": i}
			for _, c := range chunks(reply.Tool.Input, 16) {
				ev("response.function_call_arguments.delta", with(at, "delta", c))
			}
			ev("response.function_call_arguments.done", with(at, "arguments", reply.Tool.Input))
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": resp})
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	c := map[string]any{k: v}
	for k2, v2 := range m {
		c[k2] = v2
	}
	return c
}
