package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/serve/responses"
)

const summaryKey = "sk-test-key-abcdef0123456789"

// summarize sends a summarization request to a server that answers status and body, and
// returns the answer, the request it got and its body, and the error.
func summarize(t *testing.T, status int, answer string) (llm.Response, *http.Request, []byte, error) {
	t.Helper()
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	h := http.Header{"Authorization": {"Bearer " + summaryKey}}
	c := responses.Dialect{}.Summarizer(dialect.SummaryUpstream{Name: "upstream", Base: srv.URL + "/v1", Model: "gpt-x", Header: h})
	resp, err := c.Complete(context.Background(), llm.Request{MaxTokens: 300, Messages: []llm.Message{
		{Role: "system", Content: "Summarize."}, {Role: "user", Content: "The transcript."}}})
	return resp, got, body, err
}

// TestSummarizer: a summarization request in the Responses API's shape (POST /v1/responses,
// instructions, one user message item, max_output_tokens, store false, the bearer key), its
// text read from output_text or, without it, from its message items' output_text parts.
func TestSummarizer(t *testing.T) {
	resp, got, body, err := summarize(t, 200, `{"id":"resp_1","object":"response","model":"gpt-x-1","status":"completed",
		"output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The "},{"type":"output_text","text":"summary."}]}],
		"usage":{"input_tokens":40,"output_tokens":6}}`)
	if err != nil || resp.Text != "The summary." || resp.FinishReason != "stop" || resp.PromptTokens != 40 || resp.CompletionTokens != 6 || resp.Model != "gpt-x-1" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if got.URL.Path != "/v1/responses" || got.Header.Get("Authorization") != "Bearer "+summaryKey {
		t.Fatalf("request %s with headers %v", got.URL.Path, got.Header)
	}
	var b struct {
		Model           string `json:"model"`
		Instructions    string `json:"instructions"`
		MaxOutputTokens int    `json:"max_output_tokens"`
		Store           *bool  `json:"store"`
		Input           []struct {
			Type, Role, Content string
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Model != "gpt-x" || b.Instructions != "Summarize." || b.MaxOutputTokens != 300 ||
		b.Store == nil || *b.Store || len(b.Input) != 1 || b.Input[0].Type != "message" || b.Input[0].Role != "user" || b.Input[0].Content != "The transcript." {
		t.Fatalf("body %s", body)
	}
	resp, _, _, err = summarize(t, 200, `{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output_text":"cut","usage":{}}`)
	if err != nil || resp.Text != "cut" || resp.FinishReason != "length" {
		t.Fatalf("a summary cut at max_output_tokens = %+v, %v; want finish reason length", resp, err)
	}
}

// TestSummarizerErrors: the Responses API's error answers are the cascade's classes, and an
// error text that echoes the key does not hold it.
func TestSummarizerErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   cascade.Class
	}{
		{400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}`, cascade.ClassContextLength},
		{429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, cascade.ClassRateLimited},
		{401, `{"error":{"message":"Incorrect API key provided: ` + summaryKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`, cascade.ClassAuth},
	} {
		_, _, _, err := summarize(t, c.status, c.body)
		var pe *cascade.ProviderError
		if !errors.As(err, &pe) || pe.Class != c.want || pe.HTTPStatus != c.status {
			t.Errorf("%d: %#v, want class %s", c.status, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), summaryKey) {
			t.Errorf("the error holds the key: %v", err)
		}
	}
}
