// Package responses is memctl serve's dialect of OpenAI's Responses API (POST /v1/responses,
// and POST /v1/responses/compact answered locally): the shape of Codex CLI.
//
// A request's input becomes chat messages for the store: instructions a leading system
// message; each message item a message of its role (developer and system items system-like,
// user items user messages); a run of assistant-side items (assistant messages, reasoning,
// function_call and custom_tool_call items) one assistant message whose text is its messages'
// text and whose tool calls are its calls; each function_call_output or custom_tool_call_output
// a tool message. Each chat message keeps its items as sent in its Extra under Key (a JSON
// array of items; a string for instructions), so that what is sent upstream is what the agent
// sent, reasoning items' encrypted_content included.
package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Dialect is OpenAI's Responses API.
type Dialect struct{}

var _ dialect.Dialect = Dialect{}

// Key is the member of a stored chat message's Extra that holds its Responses original: the
// array of its input items, or the instructions' string.
const Key = "responses"

// SessionHeader is the header in which Codex CLI names its session (kept across resume): the
// thread of a request that names none in its path or in X-Memctl-Thread. ThreadHeader, which
// Codex sends with the same value, is read when it is absent.
const (
	SessionHeader = "Session-Id"
	ThreadHeader  = "Thread-Id"
)

// Name is "openai_responses".
func (Dialect) Name() string { return "openai_responses" }

// Routes is POST /responses.
func (Dialect) Routes() []string { return []string{"/responses"} }

// Thread is Codex's session (SessionHeader, else ThreadHeader), "" without either.
func (Dialect) Thread(r *http.Request) string {
	if s := r.Header.Get(SessionHeader); s != "" {
		return s
	}
	return r.Header.Get(ThreadHeader)
}

// Local is POST /responses/compact: the cascade's summary of the conversation.
func (Dialect) Local() []dialect.Local {
	return []dialect.Local{{Route: "/responses/compact", Kind: dialect.Compact}}
}

// CreatedBy is the created_by of the compaction items serve writes.
const CreatedBy = "memctl"

// compaction is the answer of /responses/compact.
type compaction struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Output    []json.RawMessage `json:"output"`
	Usage     map[string]int    `json:"usage"`
}

// now is the clock of compaction answers' created_at.
var now = time.Now

// LocalAnswer writes /responses/compact's answer, {"id", "object": "response.compaction",
// "output": [a developer message holding the summary, a compaction item]}: the compaction
// item's encrypted_content is the summary itself (serve encrypts nothing), and its summary
// member holds it readably too. An agent that sends the output back as its history sends the
// summary as a developer message, which the model reads; the compaction item is read as a
// developer message of the summary that is written upstream as nothing (see Parse).
func (Dialect) LocalAnswer(kind dialect.LocalKind, _ dialect.Turn, _ int, summary string) ([]byte, error) {
	if kind != dialect.Compact {
		return nil, errors.New("the Responses API has no local route of that kind")
	}
	at := now()
	id := fmt.Sprintf("%x", at.UnixNano())
	msg, _ := json.Marshal(map[string]any{"type": "message", "role": "developer",
		"content": []map[string]string{{"type": "input_text", "text": summary}}})
	item, _ := json.Marshal(map[string]string{"type": "compaction", "id": "cmp_" + id,
		"encrypted_content": summary, "summary": summary, "created_by": CreatedBy})
	return json.Marshal(compaction{ID: "resp_" + id, Object: "response.compaction", CreatedAt: at.Unix(),
		Output: []json.RawMessage{msg, item}, Usage: map[string]int{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
}

// Upstream is POST /responses with the agent's query string and auth: the configured key as
// a bearer token, else the agent's Authorization as it sent it. The agent's OpenAI-*, X-Codex-*
// and ChatGPT-Account-Id headers, and Codex's Session-Id, Thread-Id and Originator, pass on (an
// upstream routes its prompt cache by them).
func (Dialect) Upstream(t dialect.Turn, up, r *http.Request, key string) string {
	h := up.Header
	h.Set("Content-Type", "application/json")
	if t.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(k, "Openai-") || strings.HasPrefix(k, "X-Codex-") || passed[k] {
			h[k] = append([]string(nil), vs...)
		}
	}
	switch {
	case key != "":
		h.Set("Authorization", "Bearer "+key)
	case r.Header.Get("Authorization") != "":
		h.Set("Authorization", r.Header.Get("Authorization"))
	}
	if q := r.URL.RawQuery; q != "" {
		if up.URL.RawQuery != "" {
			q = up.URL.RawQuery + "&" + q
		}
		up.URL.RawQuery = q
	}
	return "/responses"
}

// passed are the agent's headers Upstream passes on besides the OpenAI-* and X-Codex-* ones.
var passed = map[string]bool{"Chatgpt-Account-Id": true, "Session-Id": true, "Thread-Id": true, "Originator": true}

// TooLong reports a refusal of the prompt as over the model's window: code
// context_length_exceeded, or a message saying so.
func (Dialect) TooLong(status int, body []byte) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	var e struct {
		Error struct {
			Code    *string `json:"code"`
			Message string  `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != nil && *e.Error.Code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(e.Error.Message)
	return strings.Contains(m, "exceeds the context window") || cascade.ClassifyHTTP(status, body) == cascade.ClassContextLength
}

// apiError is the error object of OpenAI's error answers.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errorType is OpenAI's error type of the domain's code.
func errorType(code memory.Code) string {
	switch code {
	case memory.CodeNotFound:
		return "not_found_error"
	case memory.CodeUnavailable, memory.CodeInternal:
		return "server_error"
	case "forbidden":
		return "permission_error"
	case "upstream":
		return "upstream_error"
	}
	return "invalid_request_error"
}

// WriteError writes an error in OpenAI's shape ({"error": {"message", "type", "param",
// "code"}}); param and detail "" are written as null.
func (Dialect) WriteError(w http.ResponseWriter, status int, code memory.Code, detail, msg, param string) {
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

// StreamError is an error event as the Responses API streams one: event: error, data
// {"type": "error", "code", "message", "param"}.
func (Dialect) StreamError(detail, msg string) []byte {
	var code *string
	if detail != "" {
		code = &detail
	}
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}{"error", code, msg, nil})
	var out bytes.Buffer
	out.WriteString("event: error\ndata: ")
	out.Write(b)
	out.WriteString("\n\n")
	return out.Bytes()
}
