package cascade

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/memcascade/memcascade/llm"
)

// FakeStep is one scripted answer of a Fake: after Delay (cut short when the request's
// context ends, which then returns its error), Response and Err are returned.
type FakeStep struct {
	Response llm.Response
	Err      error
	Delay    time.Duration
}

// FakeReply is a step that answers text, finish reason "stop", model "fake".
func FakeReply(text string) FakeStep {
	return FakeStep{Response: llm.Response{Text: text, FinishReason: "stop", Model: "fake"}}
}

// Fake is a scriptable Provider for tests. Call n (from 0) plays Script[n]; once the script
// is used up, Func answers; without Func, an extra call is an error (class ""). Like every
// provider of this package it returns its failures as a *ProviderError, classified here: a
// step's Err (or Func's) is its cause, with Classify's class, or its own when it is one. Every request
// is recorded. A Fake is safe for concurrent use; do not change its fields while it is used.
type Fake struct {
	Script []FakeStep
	Func   func(ctx context.Context, req llm.Request) (llm.Response, error)

	mu    sync.Mutex
	calls []llm.Request
}

var _ Provider = (*Fake)(nil)

// Complete records req and plays the next step.
func (f *Fake) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, req)
	var step *FakeStep
	if n < len(f.Script) {
		s := f.Script[n]
		step = &s
	}
	fn := f.Func
	f.mu.Unlock()

	if step == nil {
		if fn != nil {
			resp, err := fn(ctx, req)
			return resp, fakeFailure(err)
		}
		return llm.Response{}, fakeFailure(fmt.Errorf("fake: call %d has no scripted step (script has %d)", n+1, len(f.Script)))
	}
	if step.Delay > 0 {
		t := time.NewTimer(step.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return llm.Response{}, fakeFailure(ctx.Err())
		case <-t.C:
		}
	}
	return step.Response, fakeFailure(step.Err)
}

// fakeFailure is the Fake's failure for err: nil for nil, else err classified, once.
func fakeFailure(err error) error {
	if err == nil {
		return nil
	}
	return failureOf(err)
}

// Calls returns the requests received so far, in order.
func (f *Fake) Calls() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.calls...)
}
