package cascade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/redact"
)

// OpenAIConfig configures an OpenAI-compatible provider.
type OpenAIConfig struct {
	Name    string // the cascade entry's name, used in errors
	BaseURL string // e.g. http://127.0.0.1:11434/v1; "" means OpenAI's
	Model   string
	// APIKeyEnv names the environment variable that holds the API key, read at each request.
	// "" sends no Authorization header (local servers). Set but unset or empty in the
	// environment, a request fails at once with class auth, naming the variable.
	APIKeyEnv string
	// Getenv reads the environment; default os.Getenv.
	Getenv func(string) string
	// Timeout bounds one HTTP request (go-openai's default client has none); 0: none.
	Timeout time.Duration
	// MaxOutputTokens is sent when a request's MaxTokens is 0 (0: the server's default).
	MaxOutputTokens int
	// Temperature is sent, even when 0, except to reasoning models.
	Temperature float64
	// HTTPClient, when set, is copied and used; its Timeout is replaced when Timeout is set
	// and its Transport is wrapped (see OpenAI).
	HTTPClient *http.Client
}

// Response size bound: a provider's response body may hold at most
// responseBytesPerToken bytes per requested output token plus responseSlack bytes; a larger
// one is cut while it is read and classed bad_response. 16 bytes per token covers a token of
// four characters each escaped as \uXXXX in JSON; the slack covers the envelope (ids, usage,
// an error object). When a request sets no output bound, defaultResponseTokens is assumed.
const (
	responseBytesPerToken = 16
	responseSlack         = 64 << 10
	defaultResponseTokens = 32 << 10
)

// responseLimit is the most bytes read from the response to a request for maxTokens tokens.
func responseLimit(maxTokens int) int64 {
	if maxTokens <= 0 {
		maxTokens = defaultResponseTokens
	}
	return int64(maxTokens)*responseBytesPerToken + responseSlack
}

// OpenAI is a provider for any OpenAI-compatible chat completions endpoint, through
// go-openai. Each request gets an HTTP transport of its own that records the response's
// status and Retry-After (seconds or HTTP-date; OpenAI's retry-after-ms first) and bounds the
// bytes read from the body (see responseLimit), so the *ProviderError it returns is finished:
// class, status, Retry-After.
//
// Reasoning models (names that, after any "vendor/" prefix, start with o1, o3, o4, gpt-5 or
// gpt-6) get max_completion_tokens and no temperature; others get max_tokens and
// temperature, sent even when it is 0 (go-openai omits a zero temperature, which would leave
// the server's default, often 0.7 or 1).
//
// The API key never appears in an error: the provider removes it from every error text the
// server sent back before returning it.
type OpenAI struct {
	cfg  OpenAIConfig
	http http.Client // its Transport is the base of each request's exchange
}

var _ llm.Completer = (*OpenAI)(nil)

// OpenAIEntry is a cascade entry of an OpenAI-compatible provider built from cfg alone: its
// name, model, base URL and output bound are the config's, given once.
//
//	c := cascade.New(h, cascade.OpenAIEntry(cascade.OpenAIConfig{Name: "local",
//		BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5:7b", Timeout: 2 * time.Minute}))
func OpenAIEntry(cfg OpenAIConfig) Entry {
	return Entry{Name: cfg.Name, Type: "openai", Model: cfg.Model, BaseURL: cfg.BaseURL,
		Provider: NewOpenAI(cfg), MaxOutputTokens: cfg.MaxOutputTokens}
}

// NewOpenAI returns a provider for cfg.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	if cfg.Timeout > 0 {
		hc.Timeout = cfg.Timeout
	}
	if hc.Transport == nil {
		hc.Transport = http.DefaultTransport
	}
	return &OpenAI{cfg: cfg, http: hc}
}

// Complete sends one chat completion request.
func (p *OpenAI) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	var key string
	if p.cfg.APIKeyEnv != "" {
		key = p.cfg.Getenv(p.cfg.APIKeyEnv)
		if key == "" {
			return llm.Response{}, p.fail(ClassAuth, &exchange{}, fmt.Errorf("%w: %s", ErrNoAPIKey, p.cfg.APIKeyEnv))
		}
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxOutputTokens
	}
	creq := openai.ChatCompletionRequest{Model: p.cfg.Model}
	for _, m := range req.Messages {
		creq.Messages = append(creq.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	x := &exchange{base: p.http.Transport, limit: responseLimit(maxTokens)}
	if ReasoningModel(p.cfg.Model) {
		creq.MaxCompletionTokens = maxTokens
	} else {
		creq.MaxTokens = maxTokens
		creq.Temperature = float32(p.cfg.Temperature)
		x.zeroTemperature = creq.Temperature == 0
	}
	resp, err := p.client(key, x).CreateChatCompletion(ctx, creq)
	if err != nil {
		return llm.Response{}, p.failure(err, key, x)
	}
	if len(resp.Choices) == 0 {
		return llm.Response{}, p.fail(ClassBadResponse, x, fmt.Errorf("%w: no choices in the response", llm.ErrBadResponse))
	}
	choice := resp.Choices[0]
	return llm.Response{
		Text:             choice.Message.Content,
		FinishReason:     string(choice.FinishReason),
		Model:            resp.Model,
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		HTTPStatus:       x.status,
	}, nil
}

// client returns a go-openai client that sends through the exchange x.
func (p *OpenAI) client(key string, x *exchange) *openai.Client {
	conf := openai.DefaultConfig(key)
	if p.cfg.BaseURL != "" {
		conf.BaseURL = p.cfg.BaseURL
	}
	hc := p.http
	hc.Transport = x
	conf.HTTPClient = &hc
	return openai.NewClientWithConfig(conf)
}

// failure is the finished *ProviderError of a failed request: classified once, with the
// exchange's status and Retry-After, and the API key scrubbed from the server's text.
func (p *OpenAI) failure(err error, key string, x *exchange) *ProviderError {
	if x.overflow {
		return p.fail(ClassBadResponse, x, fmt.Errorf("%w: the response is larger than %d bytes, the bound for %d requested tokens",
			llm.ErrBadResponse, x.limit, (x.limit-responseSlack)/responseBytesPerToken))
	}
	pe := failureOf(err) // the one classification of this provider's failure
	pe.Provider, pe.Model, pe.Err = p.cfg.Name, p.cfg.Model, scrubKey(err, key)
	if pe.HTTPStatus == 0 {
		pe.HTTPStatus = x.status
	}
	pe.RetryAfter = x.retryAfter
	return pe
}

func (p *OpenAI) fail(class Class, x *exchange, err error) *ProviderError {
	return &ProviderError{Provider: p.cfg.Name, Model: p.cfg.Model, Class: class,
		HTTPStatus: x.status, RetryAfter: x.retryAfter, Err: err}
}

// ReasoningModel reports whether model is an OpenAI reasoning model (o1, o3, o4, gpt-5,
// gpt-6 families, after any "vendor/" prefix), which takes max_completion_tokens and no
// temperature.
func ReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// exchange is the HTTP transport of one request: it adds an explicit "temperature": 0 to the
// body when asked, records the response's status and Retry-After, and cuts the response body
// after limit bytes (overflow is then set). go-openai makes one HTTP request per call, and
// reads the body before it returns, so the fields are read after the call without a lock.
type exchange struct {
	base            http.RoundTripper
	zeroTemperature bool
	limit           int64

	status     int
	retryAfter time.Duration
	overflow   bool
}

func (x *exchange) RoundTrip(req *http.Request) (*http.Response, error) {
	if x.zeroTemperature {
		var err error
		if req, err = withZeroTemperature(req); err != nil {
			return nil, err
		}
	}
	resp, err := x.base.RoundTrip(req)
	if resp != nil {
		x.status, x.retryAfter = resp.StatusCode, retryAfter(resp.Header, time.Now())
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: x.limit, x: x}
	}
	return resp, err
}

// errResponseTooLarge is the read error of a body past its bound.
var errResponseTooLarge = fmt.Errorf("%w: response body too large", llm.ErrBadResponse)

// boundedBody reads at most left bytes of a response body; reading past them fails with
// errResponseTooLarge and marks the exchange.
type boundedBody struct {
	io.ReadCloser
	left int64
	x    *exchange
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		b.x.overflow = true
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// withZeroTemperature returns req with "temperature": 0 in its JSON body when the body has
// no temperature (go-openai drops a zero value as empty).
func withZeroTemperature(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return req, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		if _, ok := fields["temperature"]; !ok {
			fields["temperature"] = json.RawMessage("0")
			if b, err := json.Marshal(fields); err == nil {
				body = b
			}
		}
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return out, nil
}

// retryAfter reads how long a server asked to wait: OpenAI's retry-after-ms, else
// Retry-After in delay-seconds or HTTP-date form. 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e10 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e7 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// scrubKey returns err with every occurrence of the API key removed from the texts a server
// sent back (some echo the request's headers). The typed go-openai errors stay typed.
func scrubKey(err error, key string) error {
	if key == "" || err == nil {
		return err
	}
	marker := redact.Marker(redact.KindAPIKey)
	scrub := func(s string) string { return strings.ReplaceAll(s, key, marker) }
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && err == error(apiErr):
		cp := *apiErr
		cp.Message = scrub(cp.Message)
		if cp.Param != nil {
			param := scrub(*cp.Param)
			cp.Param = &param
		}
		return &cp
	case errors.As(err, &reqErr) && err == error(reqErr):
		cp := *reqErr
		cp.Body = []byte(strings.Join(strings.Fields(scrub(string(cp.Body))), " "))
		if cp.Err != nil && strings.Contains(cp.Err.Error(), key) {
			cp.Err = scrubKey(cp.Err, key)
		}
		return &cp
	}
	if strings.Contains(err.Error(), key) {
		return errors.New(scrub(err.Error()))
	}
	return err
}
