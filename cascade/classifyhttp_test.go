package cascade_test

import (
	"testing"

	"github.com/memcascade/memcascade/cascade"
)

// TestClassifyHTTP: the error answers of servers are classified from their status and body as
// the cascade classifies a provider's errors: by code and type, else by status and the words
// of an oversized input.
func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   cascade.Class
	}{
		{400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, cascade.ClassContextLength},                                // llama.cpp
		{400, `{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens","type":"BadRequestError","param":null,"code":400}`, cascade.ClassContextLength}, // vLLM
		{400, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, cascade.ClassContextLength},                                                                       // OpenAI
		{500, `{"error":"an error was encountered while running the model: input is too long"}`, cascade.ClassContextLength},
		{400, `{"error":{"message":"unknown parameter","type":"invalid_request_error"}}`, cascade.ClassBadRequest},
		{429, `{"error":{"message":"slow down","type":"rate_limit_error"}}`, cascade.ClassRateLimited},
		{503, `not json`, cascade.ClassServer},
	} {
		if got := cascade.ClassifyHTTP(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%d %s: %q, want %q", tc.status, tc.body, got, tc.want)
		}
	}
}
