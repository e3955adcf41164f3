// Package anthropic is memctl serve's dialect of Anthropic's Messages API (POST /v1/messages,
// and POST /v1/messages/count_tokens answered locally): the shape of Anthropic's SDKs and of
// Claude Code.
//
// A request's conversation becomes chat messages for the store: the top-level system prompt
// leading system messages, each user or assistant message one chat message, except that each
// tool_result block of a user message is a tool message of its own (it answers the tool_use
// of the assistant message before it, as the store wants). Each chat message keeps its
// Anthropic original in its Extra under Key, so that what is sent upstream is what the agent
// sent, byte for byte, thinking blocks' signatures included.
package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Dialect is Anthropic's Messages API.
type Dialect struct{}

var _ dialect.Dialect = Dialect{}

// Key is the member of a stored chat message's Extra that holds its Anthropic original: the
// message object (of a user message whose tool results are messages of their own, the object
// with its other blocks), the tool_result block of a tool message, the system prompt's block
// (or string) of a system message.
const Key = "anthropic"

// SessionHeader is the header in which Claude Code names its session, kept across --resume:
// the thread of a request that names none in its path or in X-Memctl-Thread.
const SessionHeader = "X-Claude-Code-Session-Id"

// DefaultVersion is the anthropic-version sent upstream when the agent sends none.
const DefaultVersion = "2023-06-01"

// Name is "anthropic_messages".
func (Dialect) Name() string { return "anthropic_messages" }

// Routes is POST /messages.
func (Dialect) Routes() []string { return []string{"/messages"} }

// Thread is the Claude Code session (SessionHeader), "" without it.
func (Dialect) Thread(r *http.Request) string { return r.Header.Get(SessionHeader) }

// Local is POST /messages/count_tokens: the size of the prompt serve would send.
func (Dialect) Local() []dialect.Local {
	return []dialect.Local{{Route: "/messages/count_tokens", Kind: dialect.CountTokens}}
}

// LocalAnswer writes count_tokens' answer, {"input_tokens": N}.
func (Dialect) LocalAnswer(kind dialect.LocalKind, _ dialect.Turn, tokens int, _ string) ([]byte, error) {
	if kind != dialect.CountTokens {
		return nil, errors.New("the Messages API has no local route of that kind")
	}
	return json.Marshal(struct {
		InputTokens int `json:"input_tokens"`
	}{tokens})
}

// Upstream is POST /messages with the agent's query string (Claude Code posts
// /v1/messages?beta=true), its anthropic-* headers (anthropic-version defaulting to
// DefaultVersion) and its auth: the configured key as x-api-key, else the agent's x-api-key or
// Authorization as it sent them.
func (Dialect) Upstream(t dialect.Turn, up, r *http.Request, key string) string {
	h := up.Header
	h.Set("Content-Type", "application/json")
	if t.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(k, "Anthropic-") {
			h[k] = append([]string(nil), vs...)
		}
	}
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", DefaultVersion)
	}
	switch {
	case key != "":
		h.Set("X-Api-Key", key)
	case r.Header.Get("X-Api-Key") != "":
		h.Set("X-Api-Key", r.Header.Get("X-Api-Key"))
	case r.Header.Get("Authorization") != "":
		h.Set("Authorization", r.Header.Get("Authorization"))
	}
	if q := r.URL.RawQuery; q != "" {
		if up.URL.RawQuery != "" {
			q = up.URL.RawQuery + "&" + q
		}
		up.URL.RawQuery = q // kept by the path joined to the URL
	}
	return "/messages"
}

// TooLong reports a 400 or 413 whose error says the prompt is over the model's window:
// "prompt is too long: N tokens > W maximum", or "input length and `max_tokens` exceed
// context limit: ...".
func (Dialect) TooLong(status int, body []byte) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	m := strings.ToLower(e.Error.Message)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "exceed context limit")
}

// errorType is Anthropic's error type of an answer's status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusConflict:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// apiError is the error object of Anthropic's error answers; code and param are serve's own
// (the detail and the parameter at fault), left out when empty.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
}

func errorBody(status int, detail, msg, param string) []byte {
	b, _ := json.Marshal(struct {
		Type  string   `json:"type"`
		Error apiError `json:"error"`
	}{"error", apiError{Type: errorType(status), Message: msg, Code: detail, Param: param}})
	return b
}

// WriteError writes an error in Anthropic's shape, {"type": "error", "error": {"type",
// "message"}}, its type from the status, with serve's code and param beside them. A 4xx answer
// carries x-should-retry: false: the SDKs would retry a 409 or a 429 otherwise, and a retry
// cannot cure what serve refused.
func (Dialect) WriteError(w http.ResponseWriter, status int, _ memory.Code, detail, msg, param string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if status >= 400 && status < 500 {
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	w.Write(append(errorBody(status, detail, msg, param), '\n'))
}

// StreamError is an error event in Anthropic's shape (event: error), of type api_error, which
// the SDKs raise.
func (Dialect) StreamError(detail, msg string) []byte {
	var b bytes.Buffer
	b.WriteString("event: error\ndata: ")
	b.Write(errorBody(http.StatusInternalServerError, detail, msg, ""))
	b.WriteString("\n\n")
	return b.Bytes()
}
