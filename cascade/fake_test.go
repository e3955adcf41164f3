package cascade_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

func TestFake(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	t.Run("script order, then Func, then an error", func(t *testing.T) {
		f := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("one"), {Err: boom}, cascade.FakeReply("three")}}
		ctx := context.Background()
		for i, want := range []struct {
			text string
			err  error
		}{{"one", nil}, {"", boom}, {"three", nil}} {
			resp, err := f.Complete(ctx, llm.Request{MaxTokens: i})
			if resp.Text != want.text || !errors.Is(err, want.err) || (want.err == nil) != (err == nil) {
				t.Fatalf("call %d = %q, %v; want %q, %v", i, resp.Text, err, want.text, want.err)
			}
		}
		if _, err := f.Complete(ctx, llm.Request{}); err == nil {
			t.Fatal("a call past the script without Func succeeded")
		}
		f.Func = func(_ context.Context, req llm.Request) (llm.Response, error) {
			return llm.Response{Text: fmt.Sprint("func ", req.MaxTokens)}, nil
		}
		if resp, err := f.Complete(ctx, llm.Request{MaxTokens: 9}); err != nil || resp.Text != "func 9" {
			t.Fatalf("Func call = %q, %v", resp.Text, err)
		}
		calls := f.Calls()
		if len(calls) != 5 || calls[0].MaxTokens != 0 || calls[2].MaxTokens != 2 || calls[4].MaxTokens != 9 {
			t.Fatalf("calls = %+v", calls)
		}
	})
	t.Run("delay honours ctx", func(t *testing.T) {
		f := &cascade.Fake{Script: []cascade.FakeStep{{Delay: 10 * time.Second, Response: llm.Response{Text: "late"}}, {Delay: 20 * time.Millisecond, Response: llm.Response{Text: "soon"}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := f.Complete(ctx, llm.Request{})
		if !errors.Is(err, context.DeadlineExceeded) || resp.Text != "" || time.Since(start) > time.Second {
			t.Fatalf("= %q, %v after %v; want the deadline promptly", resp.Text, err, time.Since(start))
		}
		start = time.Now()
		resp, err = f.Complete(context.Background(), llm.Request{})
		if err != nil || resp.Text != "soon" || time.Since(start) < 20*time.Millisecond {
			t.Fatalf("= %q, %v after %v; want the delayed answer", resp.Text, err, time.Since(start))
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		f := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{Text: "x"}, nil }}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { f.Complete(context.Background(), llm.Request{}) })
		}
		wg.Wait()
		if n := len(f.Calls()); n != 8 {
			t.Fatalf("%d calls recorded, want 8", n)
		}
	})
}

// TestClassifiedOnce: a provider of the package returns its failure classified (the Fake
// classifies a step's error where it plays it); the cascade reads that class and does not
// decide it again, even when the cause, classified anew, would give another.
func TestClassifiedOnce(t *testing.T) {
	f := &cascade.Fake{Script: []cascade.FakeStep{{Err: &openai.APIError{HTTPStatusCode: 429, Message: "slow down"}}}}
	_, err := f.Complete(context.Background(), llm.Request{})
	var pe *cascade.ProviderError
	if !errors.As(err, &pe) || pe.Class != cascade.ClassRateLimited || pe.HTTPStatus != 429 {
		t.Fatalf("Fake error = %#v; want a *ProviderError of class rate_limited, HTTP 429", err)
	}

	sqldb, _ := openDB(t)
	// The provider decided server (HTTP 503); its cause, classified anew, would be context_length.
	decided := &cascade.ProviderError{Class: cascade.ClassServer, HTTPStatus: 503, Err: fmt.Errorf("upstream said: %w", llm.ErrContextLength)}
	h := newHarness(t, sqldb, cascade.Entry{Name: "p", Model: "m", Provider: &cascade.Fake{Script: []cascade.FakeStep{{Err: decided}}}})
	_, err = h.c.Complete(context.Background(), 0, llm.Request{})
	var ce *cascade.Error
	if !errors.As(err, &ce) || len(ce.Causes) != 1 || ce.Causes[0].Class != cascade.ClassServer {
		t.Fatalf("Complete = %v; want the provider's class server", err)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 1 || rows[0].ErrorClass != string(cascade.ClassServer) || rows[0].HTTPStatus != 503 {
		t.Fatalf("attempts = %+v; want one of class server, HTTP 503", rows)
	}
}
