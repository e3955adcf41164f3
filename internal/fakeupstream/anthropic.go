package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// NewAnthropic starts a fake Anthropic Messages API. Routes: POST .../v1/messages (streaming
// when the body has "stream": true, else JSON), POST .../v1/messages/count_tokens (answers
// {"input_tokens": Tokens(body)}, never refused), anything else 404 with Anthropic's error
// body. A prompt over the window is refused with 400 invalid_request_error "prompt is too
// long: N tokens > W maximum". Usage: cache_read_input_tokens is the prefix of the body shared
// with the previous model request answered (bytes/4), input_tokens the rest of the prompt,
// cache_creation_input_tokens 0.
func NewAnthropic(opts Options) *Fake {
	return newFake(opts, (*Fake).anthropic)
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (f *Fake) anthropic(w http.ResponseWriter, r Request) {
	post := r.Method == http.MethodPost
	switch {
	case post && strings.HasSuffix(r.Path, "/v1/messages/count_tokens"):
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": Tokens(r.Body)})
		return
	case !post || !strings.HasSuffix(r.Path, "/v1/messages"):
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
		return
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body of your request: "+err.Error())
		return
	}
	if n := Tokens(r.Body); f.opts.Window > 0 && n > f.opts.Window {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, f.opts.Window))
		return
	}
	reply, n, prompt, cached := f.next(r)
	if reply.Raw != nil {
		writeRaw(w, reply.Raw)
		return
	}
	var blocks []map[string]any
	if reply.Thinking != "" {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": fmt.Sprintf("fake-signature-%d", n)})
	}
	if reply.Text != "" || reply.Tool == nil {
		blocks = append(blocks, map[string]any{"type": "text", "text": reply.Text})
	}
	stop := "end_turn"
	if t := reply.Tool; t != nil {
		id := t.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake%d", n)
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": t.Name, "input": json.RawMessage(t.Input)})
		stop = "tool_use"
	}
	usage := map[string]any{
		"input_tokens":                prompt - cached,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     cached,
		"output_tokens":               outTokens(reply),
	}
	msg := map[string]any{
		"id": fmt.Sprintf("msg_fake%d", n), "type": "message", "role": "assistant", "model": f.model(body),
		"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
	}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	s := startSSE(w)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": prompt - cached, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached, "output_tokens": 1}
	s.event("message_start", map[string]any{"type": "message_start", "message": start})
	s.event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		var empty map[string]any
		var deltas []map[string]any
		switch b["type"] {
		case "thinking":
			empty = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			for _, c := range chunks(reply.Thinking, 16) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": c})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "text":
			empty = map[string]any{"type": "text", "text": ""}
			for _, c := range chunks(reply.Text, 16) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
			}
		default:
			empty = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			for _, c := range chunks(reply.Tool.Input, 16) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": c})
			}
		}
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": empty})
		for _, d := range deltas {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
