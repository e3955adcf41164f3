package dialect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/redact"
)

// SummaryUpstream is the upstream a dialect's Summarizer sends to: the model serve fronts, as
// the thread being compacted reaches it.
type SummaryUpstream struct {
	// Name is the cascade entry's name, in errors.
	Name string
	// Base is the upstream's base URL as serve uses it (ending in /v1: serve.UpstreamBase);
	// the dialect's route is joined to it.
	Base string
	// Model is the model asked: that of the thread's latest request.
	Model string
	// Header holds the headers the dialect's Upstream set for the thread's latest turn: its
	// auth (the configured key in the dialect's form, else the agent's as forwarded) and its
	// version headers. Content-Type and Accept are the summarizer's own. It is held in memory
	// only, never stored or logged.
	Header http.Header
	// Client sends the request (nil: http.DefaultClient).
	Client *http.Client
}

// DefaultSummaryTokens bounds a summary whose request sets no bound (llm.Request.MaxTokens 0)
// in the APIs that need one (Anthropic's max_tokens).
const DefaultSummaryTokens = 4096

// Bounds of a summarizer's answer: at most summaryBytesPerToken bytes per requested token plus
// summarySlack, as cascade's OpenAI provider reads.
const (
	summaryBytesPerToken = 16
	summarySlack         = 64 << 10
)

// PostSummary posts body, a summarization request of maxTokens tokens at most, to route of u's
// upstream (joined to its base URL) with u's headers, and returns the answer's body when its
// status is 200. A transport error is returned as it is (the cascade's completer classifies
// it: network, timeout); an error answer is cascade.HTTPError's, its text the server's message
// with the key taken out; an answer over its bound is bad_response.
func PostSummary(ctx context.Context, u SummaryUpstream, route string, body []byte, maxTokens int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.Base, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the upstream's URL: %v", llm.ErrBadResponse, err)
	}
	req.URL = req.URL.JoinPath(route)
	for k, vs := range u.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	client := u.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap() // without the URL, which may carry a key in its query
		}
		return nil, scrubbed(err, u.Header)
	}
	defer resp.Body.Close()
	if maxTokens <= 0 {
		maxTokens = 32 << 10
	}
	limit := int64(maxTokens)*summaryBytesPerToken + summarySlack
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, scrubbed(err, u.Header)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, cascade.HTTPError(resp.StatusCode, resp.Header, b, errors.New(scrub(errorMessage(b), u.Header)))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: the answer is larger than %d bytes, the bound for %d requested tokens", llm.ErrBadResponse, limit, maxTokens)
	}
	return b, nil
}

// errorMessage is the message of an error answer: its error object's message (OpenAI's shape
// and Anthropic's), else its first bytes.
func errorMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + " [...]"
	}
	if s == "" {
		s = "no message"
	}
	return s
}

// secrets are the values of h that carry a key: its auth headers, a bearer token's alone too.
func secrets(h http.Header) []string {
	var out []string
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		for _, v := range h.Values(k) {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
				if tok, ok := strings.CutPrefix(v, "Bearer "); ok && strings.TrimSpace(tok) != "" {
					out = append(out, strings.TrimSpace(tok))
				}
			}
		}
	}
	return out
}

// scrub takes the keys of h out of s (a server may echo what it was sent).
func scrub(s string, h http.Header) string {
	for _, k := range secrets(h) {
		s = strings.ReplaceAll(s, k, redact.Marker(redact.KindAPIKey))
	}
	return s
}

// scrubbed is err without the keys of h in its text (err itself when it holds none).
func scrubbed(err error, h http.Header) error {
	if s := scrub(err.Error(), h); s != err.Error() {
		return errors.New(s)
	}
	return err
}
