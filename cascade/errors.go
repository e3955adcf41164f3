package cascade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/redact"
)

// Class is the class of a provider's failure, as stored in cascade_attempts.error_class
// (memory.Attempt.ErrorClass) and reported by Classify.
type Class string

// Error classes; Classes lists them all. What the cascade does with each is said beside it;
// retryable and coolsDown, at the end of this file, are where it is decided.
const (
	ClassTimeout       Class = "timeout"        // a request or a provider's turn ran out of time; retried, cooldown
	ClassNetwork       Class = "network"        // connection refused or reset, DNS, TLS; retried, cooldown
	ClassRateLimited   Class = "rate_limited"   // HTTP 429; retried after Retry-After, cooldown
	ClassServer        Class = "server"         // HTTP 5xx; retried, cooldown
	ClassAuth          Class = "auth"           // HTTP 401/403, a missing key, no quota; not retried, cooldown
	ClassBadRequest    Class = "bad_request"    // other 4xx, an unknown model; not retried, cooldown
	ClassContextLength Class = "context_length" // the input is too large for the window; not retried, no cooldown
	ClassBadResponse   Class = "bad_response"   // empty, truncated, malformed or rejected answer; retried, cooldown
	ClassCanceled      Class = "canceled"       // the caller's context ended; stops the cascade, no cooldown
)

// Classes is every error class, the one list of them.
var Classes = []Class{ClassTimeout, ClassNetwork, ClassRateLimited, ClassServer, ClassAuth, ClassBadRequest,
	ClassContextLength, ClassBadResponse, ClassCanceled}

var (
	// ErrCoolingDown is the cause recorded for a provider skipped because it is cooling down.
	ErrCoolingDown = errors.New("cooling down")

	// ErrNoAPIKey is the cause of an auth failure when the environment variable that should
	// hold a provider's API key is unset or empty. The error names the variable, never a value.
	ErrNoAPIKey = errors.New("API key environment variable is unset or empty")
)

// maxErrorText bounds the error texts stored and returned, in bytes.
const maxErrorText = 1000

// ProviderError is one provider's failure: the class that decides retries and cooldown, the
// HTTP status (0 when there was no HTTP response) and the Retry-After the server sent. A
// provider of this package (OpenAI, Fake) returns it finished, its class decided where the
// failure was seen; the cascade reads the class and never decides it again: its retrying
// completer only names the provider when missing and says what an ended context means. Its
// Error text is redacted and names the provider, the class and the status.
type ProviderError struct {
	Provider   string        // the cascade entry's name
	Model      string        // the entry's model
	Class      Class         // one of Classes; "" for a skip or an unrecognised error
	HTTPStatus int           // the response's status; 0 when there was none
	RetryAfter time.Duration // what the server asked to wait; 0 when it did not say
	Err        error         // the cause

	// redact cleans the text; nil means the package's default redactor.
	redact func(string) string
}

// Error returns a redacted description: "provider (model): class (HTTP n): cause".
func (e *ProviderError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		if e.Model != "" {
			b.WriteString(" (" + e.Model + ")")
		}
		b.WriteString(": ")
	}
	b.WriteString(e.detail())
	return b.String()
}

// detail is the text stored in an attempt row: everything but the provider's name, redacted
// and bounded.
func (e *ProviderError) detail() string {
	var b strings.Builder
	b.WriteString(classText(e.Class))
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	if b.Len() == 0 {
		b.WriteString("failed")
	}
	return cleanText(e.redact, strings.TrimPrefix(b.String(), " "))
}

// cleanText is the one place where error text is redacted: every text the package stores,
// reports or returns is a ProviderError's detail, which passes here. red nil means the
// default redactor (redact.Default). The result is cut to maxErrorText bytes.
func cleanText(red func(string) string, s string) string {
	if red == nil {
		red = redact.Default()
	}
	return truncate(red(s), maxErrorText)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " [...]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Unwrap returns the cause. An error of class context_length also matches
// llm.ErrContextLength, and one of class bad_response llm.ErrBadResponse, through Is.
func (e *ProviderError) Unwrap() error { return e.Err }

// Is reports whether the class of e corresponds to target: llm.ErrContextLength for
// context_length, llm.ErrBadResponse for bad_response.
func (e *ProviderError) Is(target error) bool {
	switch target {
	case llm.ErrContextLength:
		return e.Class == ClassContextLength
	case llm.ErrBadResponse:
		return e.Class == ClassBadResponse
	}
	return false
}

// classText is the human name of a class, used in error texts.
func classText(class Class) string {
	switch class {
	case ClassTimeout:
		return "timeout"
	case ClassNetwork:
		return "network error"
	case ClassRateLimited:
		return "rate limited"
	case ClassServer:
		return "server error"
	case ClassAuth:
		return "authentication failed"
	case ClassBadRequest:
		return "bad request"
	case ClassContextLength:
		return "input too long for the context window"
	case ClassBadResponse:
		return "bad response"
	case ClassCanceled:
		return "canceled"
	}
	return string(class) // "" (unclassified) prints nothing
}

// Error is returned by Run when no provider produced a result: every provider failed or was
// cooling down, or the caller's context ended first. It wraps each provider's cause, in
// cascade order, so errors.Is and errors.As reach every ProviderError and what it wraps.
type Error struct {
	Causes []*ProviderError
}

// Error lists every provider's failure, redacted.
func (e *Error) Error() string {
	if len(e.Causes) == 0 {
		return "cascade: no provider configured"
	}
	parts := make([]string, len(e.Causes))
	for i, c := range e.Causes {
		parts[i] = c.Error()
	}
	head := "cascade: every provider failed: "
	if last := e.Causes[len(e.Causes)-1]; last.Class == ClassCanceled {
		head = "cascade: canceled: "
	}
	return head + strings.Join(parts, "; ")
}

// Unwrap returns the causes.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Causes))
	for i, c := range e.Causes {
		errs[i] = c
	}
	return errs
}

// Classify maps an error to its class, its HTTP status (0 when none) and the Retry-After the
// server sent (0 when none). It looks at types and codes: *Error (its last cause, the one
// that ended the cascade: canceled when the caller gave up), *ProviderError (its fields),
// the llm sentinels, context errors, *openai.APIError, *openai.RequestError, net and url
// errors, JSON decoding errors. Message text is read in one place only, for servers that
// report an oversized input in words alone (vLLM, llama.cpp): a 400, 413, 422 or 500 whose
// message says so is context_length. An error it does not recognise has class "".
//
// A context.Canceled is reported as canceled; the cascade reports it so only when the
// caller's context ended (a turn that hit the attempt timeout is a timeout).
func Classify(err error) (class Class, status int, retryAfter time.Duration) {
	if err == nil {
		return "", 0, 0
	}
	var ce *Error
	if errors.As(err, &ce) && len(ce.Causes) > 0 {
		last := ce.Causes[len(ce.Causes)-1]
		return last.Class, last.HTTPStatus, last.RetryAfter
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Class, pe.HTTPStatus, pe.RetryAfter
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ClassCanceled, 0, 0
	case errors.Is(err, llm.ErrContextLength):
		return ClassContextLength, 0, 0
	case errors.Is(err, llm.ErrBadResponse):
		return ClassBadResponse, 0, 0
	case errors.Is(err, ErrNoAPIKey):
		return ClassAuth, 0, 0
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return classifyAPIError(apiErr), apiErr.HTTPStatusCode, 0
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return classifyStatus(reqErr.HTTPStatusCode, string(reqErr.Body)), reqErr.HTTPStatusCode, 0
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout, 0, 0
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ClassTimeout, 0, 0
	}
	if isNetworkError(err) {
		return ClassNetwork, 0, 0
	}
	if isDecodeError(err) {
		return ClassBadResponse, 0, 0
	}
	if isLocalRequestError(err) {
		return ClassBadRequest, 0, 0
	}
	return "", 0, 0
}

// failureOf is the one place a raw error becomes a provider's failure: the *ProviderError err
// wraps (a copy; err itself is its cause when it names none), else a new one with Classify's
// class, status and Retry-After. It is called once per failure, where the failure is seen: in
// the provider for those of this package (OpenAI.failure, Fake.Complete), in the retrying
// completer for a provider from outside (the offline rung, a caller's llm.Completer) and for
// an ended context, in Cascade.turn for a task's own error.
func failureOf(err error) *ProviderError {
	var pe *ProviderError
	if errors.As(err, &pe) {
		cp := *pe
		if cp.Err == nil {
			cp.Err = err
		}
		return &cp
	}
	class, status, retryAfter := Classify(err)
	return &ProviderError{Class: class, HTTPStatus: status, RetryAfter: retryAfter, Err: err}
}

// ClassifyHTTP classifies the error answer of an OpenAI-compatible server, its status and
// body, as Classify classifies a provider's (an error object's code and type, else the
// status, and the words of an oversized input): memctl serve reads its upstream's answers so.
func ClassifyHTTP(status int, body []byte) Class {
	var env struct {
		Error *openai.APIError `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		env.Error.HTTPStatusCode = status
		return classifyAPIError(env.Error)
	}
	return classifyStatus(status, string(body))
}

// HTTPError is the failure of a provider from outside this package (memctl serve's upstream
// rung) whose server answered an error: its class is ClassifyHTTP's of status and body (an
// error object of OpenAI's shape, or of Anthropic's, {"type": "error", "error": {"type",
// "message"}}, which reads the same: "prompt is too long" is context_length, 429 rate_limited,
// 529 overloaded a server error), its Retry-After the one h asks for, and its cause err (the
// server's message, with no key in it). The cascade's completer names the provider.
func HTTPError(status int, h http.Header, body []byte, err error) *ProviderError {
	return &ProviderError{Class: ClassifyHTTP(status, body), HTTPStatus: status, RetryAfter: retryAfter(h, time.Now()), Err: err}
}

// classifyAPIError classifies an error object an OpenAI-compatible server sent.
func classifyAPIError(e *openai.APIError) Class {
	code, _ := e.Code.(string)
	switch {
	case code == "context_length_exceeded" || e.Type == "context_length_exceeded" ||
		e.Type == "exceed_context_size_error": // llama.cpp's server
		return ClassContextLength
	case code == "insufficient_quota" || e.Type == "insufficient_quota":
		// A 429 that waiting does not cure: the account has no credit.
		return ClassAuth
	case code == "model_not_found":
		return ClassBadRequest
	}
	if e.HTTPStatusCode == 0 {
		if isContextLengthText(e.Message) {
			return ClassContextLength
		}
		return ClassBadResponse
	}
	return classifyStatus(e.HTTPStatusCode, e.Message)
}

// classifyStatus classifies an HTTP error status; msg is what the server said, read only for
// the statuses under which servers report an oversized input in words.
func classifyStatus(status int, msg string) Class {
	switch status {
	case 400, 413, 422, 500:
		if isContextLengthText(msg) {
			return ClassContextLength
		}
	}
	switch {
	case status == 413:
		return ClassContextLength // request entity too large: a smaller split fits
	case status == 429:
		return ClassRateLimited
	case status == 401 || status == 403:
		return ClassAuth
	case status == 408:
		return ClassTimeout
	case status >= 500:
		return ClassServer
	case status >= 400:
		return ClassBadRequest
	}
	return ClassBadResponse // a 1xx or 3xx where a completion was expected
}

// contextLengthPhrases are the words, lower-cased, in which OpenAI-compatible servers that
// send no error code say that the input does not fit the model's window:
//
//	vLLM:       "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens ..."
//	vLLM (new): "... is longer than the maximum model length of 8192"
//	llama.cpp:  "the request exceeds the available context size, try increasing it"
//	Anthropic:  "prompt is too long: 210000 tokens > 200000 maximum"
//	others:     "input is too long", "too many tokens", "exceeds the context window"
var contextLengthPhrases = []string{
	"maximum context length",
	"context length",
	"context_length_exceeded",
	"too many tokens",
	"prompt is too long",
	"input is too long",
	"exceeds the context window",
	"exceeds the available context size",
	"maximum model length",
	"context window exceeded",
}

// isContextLengthText is the one place where message text decides a class: it reports
// whether a server's error message says that the input is too long for the model. It is
// consulted only for HTTP statuses that carry no code meaning so (see classifyStatus).
func isContextLengthText(msg string) bool {
	msg = strings.ToLower(msg)
	for _, p := range contextLengthPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// refusalWindows are the forms in which a server's refusal names the window it refused over,
// with the prompt's size by its own count (groups "n" and "w"):
//
//	Anthropic:  "prompt is too long: 210000 tokens > 200000 maximum"
//	llama.cpp:  "the request exceeds the available context size (9000 tokens, 8192 available)"
//	vLLM:       "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens ..."
var refusalWindows = []*regexp.Regexp{
	regexp.MustCompile(`(?P<n>\d+) tokens > (?P<w>\d+) maximum`),
	regexp.MustCompile(`\((?P<n>\d+) tokens, (?P<w>\d+) available\)`),
	regexp.MustCompile(`maximum context length is (?P<w>\d+) tokens\. However, you requested (?P<n>\d+) tokens`),
}

// RefusalWindow reads, from the body of a server's refusal of a prompt as too long, the
// window it names and the prompt's size by the server's count; ok is false when it names no
// window (or one out of range).
func RefusalWindow(body []byte) (prompt, window int, ok bool) {
	for _, re := range refusalWindows {
		m := re.FindSubmatch(body)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(string(m[re.SubexpIndex("n")]))
		w, _ := strconv.Atoi(string(m[re.SubexpIndex("w")]))
		if checkWindow(w) != nil || n <= 0 {
			return 0, 0, false
		}
		return n, w, true
	}
	return 0, 0, false
}

// isNetworkError reports transport failures: refused or reset connections, DNS, a closed
// connection, any *url.Error left after the more specific checks.
func isNetworkError(err error) bool {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var urlErr *url.Error
	switch {
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return true
	case errors.As(err, &urlErr):
		return true
	}
	return false
}

// isDecodeError reports a response body that is not the JSON expected.
func isDecodeError(err error) bool {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &syntaxErr) || errors.As(err, &typeErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// isLocalRequestError reports requests go-openai refuses to send.
func isLocalRequestError(err error) bool {
	for _, target := range []error{
		openai.ErrChatCompletionInvalidModel,
		openai.ErrChatCompletionStreamNotSupported,
		openai.ErrReasoningModelMaxTokensDeprecated,
		openai.ErrReasoningModelLimitationsLogprobs,
		openai.ErrReasoningModelLimitationsOther,
		openai.ErrReasoningEffortUnsupported,
		openai.ErrReasoningToolsRequireResponses,
		openai.ErrReasoningSamplingUnsupported,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// retryable reports whether a class is retried within a provider's max_attempts.
func retryable(class Class) bool {
	switch class {
	case ClassTimeout, ClassNetwork, ClassServer, ClassRateLimited, ClassBadResponse:
		return true
	}
	return false
}

// coolsDown reports whether a provider that gave up with this class is put on cooldown.
func coolsDown(class Class) bool {
	return class != ClassContextLength && class != ClassCanceled
}
