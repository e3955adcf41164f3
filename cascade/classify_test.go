package cascade_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	var syntaxErr *json.SyntaxError
	if err := json.Unmarshal([]byte("{oops"), &map[string]any{}); !errors.As(err, &syntaxErr) {
		t.Fatal("no syntax error")
	}
	tests := []struct {
		name       string
		err        error
		class      cascade.Class
		status     int
		retryAfter time.Duration
	}{
		{"nil", nil, "", 0, 0},
		{"unknown", errors.New("something"), "", 0, 0},
		{"provider error", fmt.Errorf("wrapped: %w", &cascade.ProviderError{Class: cascade.ClassRateLimited, HTTPStatus: 429, RetryAfter: 3 * time.Second}), "rate_limited", 429, 3 * time.Second},
		{"caller canceled", fmt.Errorf("x: %w", context.Canceled), "canceled", 0, 0},
		{"cascade error: its last cause", &cascade.Error{Causes: []*cascade.ProviderError{
			{Class: cascade.ClassServer, HTTPStatus: 503}, {Class: cascade.ClassCanceled, Err: context.Canceled}}}, "canceled", 0, 0},
		{"deadline", &url.Error{Op: "Post", URL: "http://x", Err: context.DeadlineExceeded}, "timeout", 0, 0},
		{"llm context length", fmt.Errorf("chunk: %w", llm.ErrContextLength), "context_length", 0, 0},
		{"llm bad response", fmt.Errorf("chunk: %w", llm.ErrBadResponse), "bad_response", 0, 0},
		{"no key", fmt.Errorf("%w: OPENAI_API_KEY", cascade.ErrNoAPIKey), "auth", 0, 0},
		{"api 429", &openai.APIError{HTTPStatusCode: 429, Message: "Rate limit reached"}, "rate_limited", 429, 0},
		{"api 429 insufficient_quota", &openai.APIError{HTTPStatusCode: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"}, "auth", 429, 0},
		{"api 401", &openai.APIError{HTTPStatusCode: 401}, "auth", 401, 0},
		{"api 403", &openai.APIError{HTTPStatusCode: 403}, "auth", 403, 0},
		{"api 404", &openai.APIError{HTTPStatusCode: 404, Code: "model_not_found"}, "bad_request", 404, 0},
		{"api 408", &openai.APIError{HTTPStatusCode: 408}, "timeout", 408, 0},
		{"api 409", &openai.APIError{HTTPStatusCode: 409}, "bad_request", 409, 0},
		{"api 413", &openai.APIError{HTTPStatusCode: 413}, "context_length", 413, 0},
		{"api 400", &openai.APIError{HTTPStatusCode: 400, Message: "invalid role"}, "bad_request", 400, 0},
		{"api 400 code", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded", Param: str("messages")}, "context_length", 400, 0},
		{"api 400 llama.cpp type", &openai.APIError{HTTPStatusCode: 400, Code: 400, Type: "exceed_context_size_error"}, "context_length", 400, 0},
		{"api 400 words only", &openai.APIError{HTTPStatusCode: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"}, "context_length", 400, 0},
		{"api 400 anthropic words", &openai.APIError{HTTPStatusCode: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, "context_length", 400, 0},
		{"api 500", &openai.APIError{HTTPStatusCode: 500}, "server", 500, 0},
		{"api 503", &openai.APIError{HTTPStatusCode: 503}, "server", 503, 0},
		{"api 503 that mentions context length", &openai.APIError{HTTPStatusCode: 503, Message: "context length queue full"}, "server", 503, 0},
		{"request 502 html", &openai.RequestError{HTTPStatusCode: 502, Body: []byte("<html>502 Bad Gateway</html>")}, "server", 502, 0},
		{"request 429", &openai.RequestError{HTTPStatusCode: 429, Body: []byte("slow down")}, "rate_limited", 429, 0},
		{"request 400 llama.cpp words", &openai.RequestError{HTTPStatusCode: 400, Body: []byte("the request exceeds the available context size, try increasing it")}, "context_length", 400, 0},
		{"request 400 vLLM", &openai.RequestError{HTTPStatusCode: 400, Body: []byte(`{"object":"error","message":"This model's maximum context length is 8192 tokens.","code":400}`)}, "context_length", 400, 0},
		{"refused", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "network", 0, 0},
		{"dns", &url.Error{Op: "Post", URL: "http://x", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, "network", 0, 0},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), "network", 0, 0},
		{"eof from the transport", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, "network", 0, 0},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, "timeout", 0, 0},
		{"json", syntaxErr, "bad_response", 0, 0},
		{"json truncated", io.ErrUnexpectedEOF, "bad_response", 0, 0},
		{"go-openai refuses", openai.ErrReasoningModelMaxTokensDeprecated, "bad_request", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			class, status, ra := cascade.Classify(tc.err)
			if class != tc.class || status != tc.status || ra != tc.retryAfter {
				t.Errorf("Classify(%v) = %q, %d, %v; want %q, %d, %v", tc.err, class, status, ra, tc.class, tc.status, tc.retryAfter)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestProviderErrorIs(t *testing.T) {
	t.Parallel()
	cl := &cascade.ProviderError{Provider: "p", Class: cascade.ClassContextLength, HTTPStatus: 400, Err: errors.New("too long")}
	if !errors.Is(cl, llm.ErrContextLength) || errors.Is(cl, llm.ErrBadResponse) {
		t.Error("context_length error does not match llm.ErrContextLength alone")
	}
	br := &cascade.ProviderError{Provider: "p", Class: cascade.ClassBadResponse, Err: errors.New("empty")}
	if !errors.Is(br, llm.ErrBadResponse) || errors.Is(br, llm.ErrContextLength) {
		t.Error("bad_response error does not match llm.ErrBadResponse alone")
	}
	cause := errors.New("root")
	if pe := (&cascade.ProviderError{Err: cause}); !errors.Is(pe, cause) || pe.Unwrap() != cause {
		t.Error("Unwrap does not return the cause")
	}
	// Error text is redacted even on an error built by hand.
	pe := &cascade.ProviderError{Provider: "p", Model: "m", Class: cascade.ClassAuth, HTTPStatus: 401,
		Err: errors.New("header was Authorization: Bearer sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD")}
	if got := pe.Error(); got == "" || strings.Contains(got, "abcdefghijklmnopqrstuvwxyz0123456789") || !strings.Contains(got, "p (m): authentication failed (HTTP 401)") {
		t.Errorf("Error() = %q", got)
	}
}
