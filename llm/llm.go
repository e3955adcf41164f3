// Package llm holds the few types that the compactor (package compact) and the provider cascade
// (package cascade) exchange. It lets cascade.Cascade satisfy compact.Summarizer without either
// package importing the other. It owns only these types (Request, Response, Completer, Task,
// Target, Result, Price and the errors both sides match); it has no logic but a price's
// arithmetic, and must not import anything of this module but the transcript's message type
// (package transcript, a leaf).
package llm

import (
	"context"
	"errors"
	"math"

	"github.com/memcascade/memcascade/transcript"
)

// Message is one chat message of a request sent to a provider.
type Message struct {
	Role    string
	Content string
}

// Request is one chat completion request.
type Request struct {
	// Messages are the chat messages a model reads: for a summary, the instructions and the
	// rendered transcript.
	Messages []Message
	// Transcript is the conversation a summary request is about, as the messages Messages
	// render (already redacted, not trimmed). A summarizer that reads structure rather than a
	// prompt (package extractive) reads Previous, Running and Transcript, never the
	// instructions in Messages. Empty when the request is not about a conversation.
	Transcript []transcript.Message
	// Previous is the summary this one updates: on a re-compaction, the previous compaction's
	// summary (redacted), sent in a block of its own ahead of the transcript, not as a message
	// of it. It is set on the first (or only) part of a request in parts; later parts carry it
	// within Running. "" on a first compaction.
	Previous string
	// Running is the summary of the parts of the conversation before Transcript when it is
	// summarized in parts; "" for the first or only part.
	Running string
	// MaxTokens bounds the completion; 0 means the provider's configured max_output_tokens.
	MaxTokens int
	// TargetTokens is the size the caller would like the answer to have (0: none). A model
	// reads it from the prompt; a local summarizer may size its output with it.
	TargetTokens int
	// Headings are the section headings the summarization instructions declare, by section
	// (transcript.Section*); nil or "" keeps a section's built-in heading. A summarizer that
	// writes the sections itself (package extractive) writes them under these.
	Headings []string
	// Accept, when set, inspects a completion's text. A non-nil error rejects it as a bad
	// response (class bad_response): the attempt is logged as failed and retried within the
	// provider's max_attempts.
	Accept func(text string) error
}

// Response is a provider's answer to a Request.
type Response struct {
	Text         string
	FinishReason string
	Model        string
	// PromptTokens and CompletionTokens are the usage the server reported; 0 when it sent none.
	PromptTokens     int
	CompletionTokens int
	// HTTPStatus is the status of the HTTP exchange that carried the answer; 0 when there was
	// none (a local provider).
	HTTPStatus int
}

// Target describes the provider a Task is running against.
type Target struct {
	Name  string
	Model string
	// ContextWindow is the number of tokens the provider accepts (prompt and completion);
	// 0 means unknown (no limit is applied).
	ContextWindow   int
	MaxOutputTokens int
	// Concurrency is how many requests the task may have in flight at once through its
	// Completer (at least 1). The Completer is safe for concurrent use; a task that sends
	// independent requests (chunk summaries to be merged) may run up to this many together.
	Concurrency int
	// Price is what the provider charges (nil: no price, as the offline rung). A task with a
	// spending limit estimates its requests with it and, when they would cost more, returns
	// ErrOverCost before sending anything.
	Price *Price
}

// Price is what a provider charges, in dollars per million tokens. Since a million
// micro-dollars make a dollar, a token costs Input (or Output) micro-dollars.
type Price struct {
	Input  float64 // per million prompt tokens
	Output float64 // per million completion tokens
}

// Micros is what input prompt tokens and output completion tokens cost at p, in
// micro-dollars, rounded to the nearest.
func (p Price) Micros(input, output int) int64 {
	return int64(math.Round(float64(input)*p.Input + float64(output)*p.Output))
}

// Completer sends requests to one provider, with its retries, timeouts and attempt log.
type Completer interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// TranscriptReader is implemented by a Completer that reads a summary request's conversation
// (Transcript, Previous and Running), never its Messages, when the request has one, and that
// reports the usage of what it read (Response.PromptTokens): the offline summarizer (package
// extractive), and a cascade's completer for it. A caller may send such a Completer a request
// about a conversation without Messages: a long conversation is then not rendered into
// instructions nothing reads.
type TranscriptReader interface {
	ReadsTranscript() bool
}

// Task is work that one provider does through its Completer, for example summarizing a long
// text chunk by chunk within that provider's window. A Task returns the final text.
type Task func(ctx context.Context, target Target, c Completer) (string, error)

// Result is the outcome of a Task that succeeded.
type Result struct {
	Text     string
	Provider string
	Model    string
}

// ErrBadResponse marks an answer that cannot be used (empty, truncated, rejected by
// Request.Accept). Errors that wrap it are classed bad_response.
var ErrBadResponse = errors.New("bad response")

// ErrContextLength marks a request too large for the provider's window. Errors that wrap it are
// classed context_length: the provider is not put on cooldown, and the caller may split its input.
var ErrContextLength = errors.New("context length exceeded")

// ErrWindowTooSmall marks a provider whose context window cannot hold a useful request (the
// fixed part of the request and the answer leave no room for the input). A Task returns an
// error wrapping it, saying the window and what the request needed, before sending anything:
// the cascade records the provider as skipped for its window (no cooldown) and moves on.
var ErrWindowTooSmall = errors.New("context window too small")

// ErrOverCost marks a provider whose requests are estimated to cost more than the caller's
// spending limit (compaction.max_cost). A Task returns an error wrapping it, saying the
// estimate and the limit, before sending anything: the cascade records the provider as
// skipped for its cost (outcome skipped_cost, no cooldown) and moves on.
var ErrOverCost = errors.New("estimated cost over the limit")
