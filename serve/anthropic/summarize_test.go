package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/dialect"
)

// summaryServer answers every request with status, headers and body, and records the last.
func summaryServer(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *http.Request, *[]byte) {
	var got http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r.Clone(context.Background())
		gotBody, _ = io.ReadAll(r.Body)
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &gotBody
}

const summaryKey = "sk-ant-test-key-abcdef0123456789"

func summarizer(srv *httptest.Server) llm.Completer {
	h := http.Header{}
	h.Set("X-Api-Key", summaryKey)
	return anthropic.Dialect{}.Summarizer(dialect.SummaryUpstream{Name: "upstream", Base: srv.URL + "/v1", Model: "claude-x", Header: h})
}

var summaryReq = llm.Request{MaxTokens: 500, Messages: []llm.Message{
	{Role: "system", Content: "Summarize."}, {Role: "user", Content: "The transcript."}}}

// TestSummarizer: a summarization request in the Messages API's shape (POST /v1/messages,
// system top-level, the user's message, max_tokens, x-api-key and anthropic-version), its
// text blocks joined, its usage with the cache's tokens, max_tokens read as truncated.
func TestSummarizer(t *testing.T) {
	srv, got, body := summaryServer(t, 200, nil, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x-1",
		"content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"The "},{"type":"text","text":"summary."}],
		"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":7}}`)
	resp, err := summarizer(srv).Complete(context.Background(), summaryReq)
	if err != nil || resp.Text != "The summary." || resp.FinishReason != "stop" || resp.PromptTokens != 115 || resp.CompletionTokens != 7 || resp.Model != "claude-x-1" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if got.URL.Path != "/v1/messages" || got.Header.Get("X-Api-Key") != summaryKey || got.Header.Get("Anthropic-Version") != anthropic.DefaultVersion {
		t.Fatalf("request %s with headers %v", got.URL.Path, got.Header)
	}
	var b struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    string `json:"system"`
		Messages  []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Stream *bool `json:"stream"`
	}
	if err := json.Unmarshal(*body, &b); err != nil || b.Model != "claude-x" || b.MaxTokens != 500 || b.System != "Summarize." ||
		len(b.Messages) != 1 || b.Messages[0].Role != "user" || b.Messages[0].Content != "The transcript." || b.Stream != nil {
		t.Fatalf("body %s", *body)
	}
	srv, _, _ = summaryServer(t, 200, nil, `{"content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":500}}`)
	if resp, err := summarizer(srv).Complete(context.Background(), summaryReq); err != nil || resp.FinishReason != "length" {
		t.Fatalf("a summary cut at max_tokens = %+v, %v; want finish reason length", resp, err)
	}
}

// TestSummarizerErrors: Anthropic's error answers are the cascade's classes (too long:
// context_length; 429: rate_limited with its Retry-After; 529: server), and an error text
// that echoes the key does not hold it.
func TestSummarizerErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		header http.Header
		msg    string
		want   cascade.Class
		after  time.Duration
	}{
		{400, nil, "prompt is too long: 210000 tokens > 200000 maximum", cascade.ClassContextLength, 0},
		{429, http.Header{"Retry-After": {"7"}}, "Number of request tokens has exceeded your rate limit", cascade.ClassRateLimited, 7 * time.Second},
		{529, nil, "Overloaded", cascade.ClassServer, 0},
		{401, nil, "invalid x-api-key " + summaryKey, cascade.ClassAuth, 0},
	} {
		body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "x", "message": c.msg}})
		srv, _, _ := summaryServer(t, c.status, c.header, string(body))
		_, err := summarizer(srv).Complete(context.Background(), summaryReq)
		var pe *cascade.ProviderError
		if !errors.As(err, &pe) || pe.Class != c.want || pe.HTTPStatus != c.status || pe.RetryAfter != c.after {
			t.Errorf("%d %q: %#v, want class %s", c.status, c.msg, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), summaryKey) {
			t.Errorf("the error holds the key: %v", err)
		}
	}
}
