// Package chatcompletions is memctl serve's dialect of OpenAI's Chat Completions API
// (POST /v1/chat/completions): the shape of the OpenAI SDKs, Ollama, llama.cpp, vLLM and most
// agent frameworks.
package chatcompletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Dialect is Chat Completions.
type Dialect struct{}

var _ dialect.Dialect = Dialect{}

// Name is "chat_completions".
func (Dialect) Name() string { return "chat_completions" }

// Routes is POST /chat/completions.
func (Dialect) Routes() []string { return []string{"/chat/completions"} }

// Thread is "": a Chat Completions client names its thread in the path or X-Memctl-Thread.
func (Dialect) Thread(*http.Request) string { return "" }

// Parse reads a request's body in one pass over it (dialect.ScanObject). A message sent at the
// same place with the same bytes as in prev (an agent resending its history), and tools sent
// with the same bytes, are taken as they were decoded then, not decoded again; a request that
// resends all of prev's messages writes its own past them, in prev's arrays (dialect.NewSent).
func (Dialect) Parse(body []byte, prev *dialect.Sent) (dialect.Turn, error) {
	t, sc, shared, err := dialect.ScanTurn(body, "messages", `{"model": ..., "messages": [...]}`, prev)
	if err != nil {
		return t, err
	}
	raws := sc.Elems
	if len(raws) == 0 {
		return t, &dialect.BadRequest{Param: "messages", Msg: "messages: want a non-empty array of chat messages"}
	}
	t.Prev = prev
	// The messages the scan took from the previous request are its own, byte for byte: they
	// are taken as they are, in place when the request extends it (dialect.NewSent).
	shared = min(shared, len(prev.HashesOrNil()), len(prev.MsgsOrNil()))
	sent := dialect.NewSent(prev, shared, len(raws))
	sent.Own = true // the next request extends Msgs in place: the history's are not put there
	t.Messages = sent.Msgs
	hashes := sent.Hashes
	t.Same = shared
	for i := shared; i < len(raws); i++ {
		raw := raws[i]
		hashes[i] = dialect.HashBytes(raw)
		if prev != nil && i < len(prev.Hashes) && hashes[i] == prev.Hashes[i] {
			t.Messages[i] = prev.Msgs[i]
			if t.Same == i {
				t.Same++
			}
			continue
		}
		if raw[0] != '{' {
			return t, &dialect.BadRequest{Param: fmt.Sprintf("messages[%d]", i), Msg: fmt.Sprintf("messages[%d]: want a message object", i)}
		}
		if err := json.Unmarshal(raw, &t.Messages[i]); err != nil {
			return t, &dialect.BadRequest{Param: fmt.Sprintf("messages[%d]", i), Msg: fmt.Sprintf("messages[%d]: %v", i, err)}
		}
	}
	sent.Scan = sc
	t.Sent, t.Taken = sent, t.Same
	if raw, ok := t.Fields["stream"]; ok && !bytes.Equal(raw, []byte("null")) {
		if json.Unmarshal(raw, &t.Stream) != nil {
			return t, &dialect.BadRequest{Param: "stream", Msg: "stream: want true or false"}
		}
	}
	if raw, ok := t.Fields["tools"]; ok && !bytes.Equal(raw, []byte("null")) {
		h := dialect.HashBytes(raw)
		if prev != nil && prev.Tools != nil && h == prev.ToolsHash {
			t.Tools = prev.Tools
		} else if json.Unmarshal(raw, &t.Tools) != nil {
			return t, &dialect.BadRequest{Param: "tools", Msg: "tools: want an array of tool definitions"}
		}
		if t.Tools == nil {
			t.Tools = []chat.Tool{}
		}
		t.Sent.ToolsHash, t.Sent.Tools = h, t.Tools
	}
	return t, nil
}

// Local is none: Chat Completions has no route serve answers itself.
func (Dialect) Local() []dialect.Local { return nil }

// LocalAnswer is never called: there is no local route.
func (Dialect) LocalAnswer(dialect.LocalKind, dialect.Turn, int, string) ([]byte, error) {
	return nil, errors.New("chat completions has no local route")
}

// Upstream is POST /chat/completions, with the configured key as a bearer token.
func (Dialect) Upstream(t dialect.Turn, up, _ *http.Request, key string) string {
	up.Header.Set("Content-Type", "application/json")
	if t.Stream {
		up.Header.Set("Accept", "text/event-stream")
	} else {
		up.Header.Set("Accept", "application/json")
	}
	if key != "" {
		up.Header.Set("Authorization", "Bearer "+key)
	}
	return "/chat/completions"
}

// Render writes the request as the agent sent it, its members in its order, with the active
// context as its messages, written from their stored encodings, and serve's note (t.Notice),
// when there is one, as the last message. A turn that forwards the request unchanged
// (dialect.Turn.SentBody) is the request's own bytes.
func (Dialect) Render(t dialect.Turn, _ []memory.Entry, enc []json.RawMessage) ([]byte, error) {
	if b := t.SentBody(); b != nil {
		return b, nil
	}
	n := 64 + len(t.Fields)*8
	for k, v := range t.Fields {
		if k != "messages" {
			n += len(k) + len(v)
		}
	}
	for _, e := range enc {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		key, _ := json.Marshal(k) // a string always marshals
		b = append(append(b, key...), ':')
		b = append(b, v...)
	}
	written := map[string]bool{}
	keys := append(slices.Clone(t.Order), "messages")
	for k := range t.Fields {
		if !slices.Contains(keys, k) {
			keys = append(keys, k) // added by the proxy (recall)
		}
	}
	slices.Sort(keys[len(t.Order)+1:]) // in one order, whatever the map's
	for _, k := range keys {
		v, ok := t.Fields[k]
		if written[k] || !ok && k != "messages" {
			continue
		}
		written[k] = true
		if k != "messages" {
			member(k, v)
			continue
		}
		member(k, nil)
		b = append(b, '[')
		for i, e := range enc {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		if t.Notice != nil {
			// serve's note, the last message, never stored.
			note, err := json.Marshal(t.Notice)
			if err != nil {
				return nil, err
			}
			if len(enc) > 0 {
				b = append(b, ',')
			}
			b = append(b, note...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// Reply reads choices[0].message of a chat completion, and its usage.
func (Dialect) Reply(b []byte) ([]chat.Message, dialect.Usage, error) {
	var resp struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply is not a chat completion: %v", err)
	}
	if len(resp.Choices) == 0 || len(resp.Choices[0].Message) == 0 {
		return nil, dialect.Usage{}, errors.New("the upstream's reply has no choices[0].message")
	}
	var m chat.Message
	if err := json.Unmarshal(resp.Choices[0].Message, &m); err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply: choices[0].message: %v", err)
	}
	if m.Role == "" {
		m.Role = chat.RoleAssistant
	}
	return []chat.Message{m}, UsageOf(b), nil
}

// UsageOf reads the usage of a chat completion or of a stream's chunk: prompt_tokens,
// prompt_tokens_details.cached_tokens and completion_tokens (zero when not reported).
func UsageOf(b []byte) dialect.Usage {
	var v struct {
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return dialect.Usage{}
	}
	u := dialect.Usage{PromptTokens: v.Usage.PromptTokens, CompletionTokens: v.Usage.CompletionTokens}
	if d := v.Usage.PromptTokensDetails; d != nil {
		u.CachedTokens = d.CachedTokens
	}
	return u
}

// TooLong is the cascade's classification of a provider's answer: context_length.
func (Dialect) TooLong(status int, body []byte) bool {
	return cascade.ClassifyHTTP(status, body) == cascade.ClassContextLength
}

// apiError is the error object of OpenAI's error answers.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errorTypes are OpenAI's error types of the domain's codes (and serve's own).
var errorTypes = map[memory.Code]string{
	memory.CodeInvalid:     "invalid_request_error",
	memory.CodeNotFound:    "not_found_error",
	memory.CodeConflict:    "invalid_request_error",
	memory.CodeOverLimit:   "invalid_request_error",
	memory.CodeUnavailable: "server_error",
	memory.CodeInternal:    "server_error",
	"forbidden":            "permission_error",
	"upstream":             "upstream_error",
}

// errorType is OpenAI's error type of code: invalid_request_error when no other is named.
func errorType(code memory.Code) string {
	if t, ok := errorTypes[code]; ok {
		return t
	}
	return "invalid_request_error"
}

// WriteError writes an error in OpenAI's shape ({"error": {"message", "type", "param",
// "code"}}); param and detail "" are written as null.
func (Dialect) WriteError(w http.ResponseWriter, status int, code memory.Code, detail, msg, param string) {
	WriteError(w, status, code, detail, msg, param)
}

// WriteError is Dialect.WriteError, for serve's own routes (the inspection API), which answer
// in OpenAI's shape too.
func WriteError(w http.ResponseWriter, status int, code memory.Code, detail, msg, param string) {
	e := apiError{Message: msg, Type: errorType(code)}
	if param != "" {
		e.Param = &param
	}
	if detail != "" {
		e.Code = &detail
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]apiError{"error": e})
}

// StreamError is an error event in OpenAI's shape (data: {"error": {...}}), which OpenAI's
// clients raise as an error; no data: [DONE] follows it.
func (Dialect) StreamError(detail, msg string) []byte {
	b, _ := json.Marshal(map[string]apiError{"error": {Message: msg, Type: errorType("upstream"), Code: &detail}})
	return append(append([]byte("data: "), b...), "\n\n"...)
}
