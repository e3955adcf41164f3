package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Rates of the simulated local summarizer (a small model on a laptop or a board).
const (
	promptRate = 200.0 // prompt tokens read per second
	outputRate = 20.0  // tokens written per second
)

// windowResult is one compaction of the long recorded thread through a summarizer window.
type windowResult struct {
	window, middle, requests, prompt, output int
	over                                     int // requests whose prompt and output bound exceed the window
	simulated, cpu                           time.Duration
	err                                      error
}

// windowRows: for summarizer windows of 1,024 to 128k tokens, one compaction of the long
// recorded thread (the testdata conversations imported twice into one thread) through a fake
// provider: its requests, the prompt tokens sent, the transcript's share of each request's
// window, the ratio of requests to ceil(middle / (window / 2)) (target: at most 1.5, plus 2
// requests), and the time it takes a summarizer reading 200 prompt tokens/s and writing 20
// tokens/s. That time is simulated (a fake clock: the sum over the requests of prompt/200 +
// output/20 seconds, the requests being sequential), plus the compactor's own measured time.
// A request whose prompt and output bound exceed the window is counted and fails the row.
func (b *bench) windowRows([]conversation) error {
	for _, window := range []int{1024, 2048, 8192, 128000} {
		r := compactThroughWindow(b.dir, window, b.windowMaxOutput)
		name := fmt.Sprintf("summarizer window %s (max_output_tokens %d), long recorded thread", windowName(window), b.windowMaxOutput)
		if r.err != nil {
			b.add(name, "fails: "+oneLine(r.err.Error()), "applied", ptr(false))
			continue
		}
		ideal := int(math.Ceil(float64(r.middle) / float64(window/2)))
		ratio := float64(r.requests) / float64(ideal)
		perRequest := r.middle / r.requests
		value := fmt.Sprintf("%d requests (%.2f × ceil(%d / %d) = %d), %d prompt tokens sent, transcript %d tokens per request = %.0f%% of the window, %s at 200/20 tokens/s (compactor %s)",
			r.requests, ratio, r.middle, window/2, ideal, r.prompt, perRequest, 100*float64(perRequest)/float64(window),
			(r.simulated + r.cpu).Round(time.Second), r.cpu.Round(time.Millisecond))
		if r.over > 0 {
			value += fmt.Sprintf("; %d requests OVER the window", r.over)
		}
		b.add(name, value, "≤ 1.5 × ceil + 2 requests, each within the window", ptr(float64(r.requests) <= 1.5*float64(ideal)+2 && r.over == 0))
	}
	return nil
}

func windowName(w int) string {
	if w >= 1024 && w%1000 == 0 {
		return fmt.Sprintf("%dk", w/1000)
	}
	return fmt.Sprintf("%d", w)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// compactThroughWindow imports the long recorded thread into a fresh store and compacts it
// (token_limit 16000, forced) through one fake provider with the given window.
func compactThroughWindow(dir string, window, maxOutput int) (r windowResult) {
	r.window = window
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("window-%d.db", window))
	s, err := memory.Open(ctx, path)
	if err != nil {
		r.err = err
		return r
	}
	defer s.Close()
	files, err := filepath.Glob("testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		r.err = fmt.Errorf("no testdata conversations (run from the repository root): %v", err)
		return r
	}
	for range 2 {
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				r.err = err
				return r
			}
			_, err = s.Import(ctx, "t", fh, memory.AppendOptions{Model: "gpt-4o"})
			fh.Close()
			if err != nil {
				r.err = err
				return r
			}
		}
	}
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		r.err = err
		return r
	}
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		msgs := make([]chat.Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = chat.TextMessage(m.Role, m.Content)
		}
		prompt := counter.CountMessages(msgs)
		// The model writes what it is asked for, within the bound it is given.
		limit := req.MaxTokens
		if limit <= 0 {
			limit = maxOutput
		}
		words := limit / 2
		if req.TargetTokens > 0 {
			words = min(req.TargetTokens, limit*3/4)
		}
		text := "## Goal and constraints\n" + strings.TrimSpace(strings.Repeat("work went on ", max(words, 8)/3))
		out := counter.CountText(text)
		r.requests++
		if prompt+limit > window {
			r.over++
		}
		r.prompt += prompt
		r.output += out
		r.simulated += time.Duration((float64(prompt)/promptRate + float64(out)/outputRate) * float64(time.Second))
		return llm.Response{Text: text, FinishReason: "stop", PromptTokens: prompt, CompletionTokens: out}, nil
	}}
	e := cascade.Entry{Name: "local", Type: "fake", Model: "small", Provider: fake, ContextWindow: window,
		MaxOutputTokens: maxOutput, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
	c := compact.New(s, cascade.New(s.DB(), e), compact.Settings{TokenLimit: 16000})
	dry, err := c.Compact(ctx, "t", compact.Options{Force: true, DryRun: true})
	if err != nil {
		r.err = err
		return r
	}
	hist, err := s.History(ctx, "t")
	if err != nil {
		r.err = err
		return r
	}
	for _, m := range hist {
		if m.Seq >= dry.FromSeq && m.Seq <= dry.ToSeq {
			r.middle += m.Tokens
		}
	}
	start := time.Now()
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	r.cpu = time.Since(start)
	if err == nil && rep.Status != memory.StatusApplied {
		err = fmt.Errorf("status %s: %s", rep.Status, rep.Error)
	}
	if err != nil && r.requests == 0 {
		err = fmt.Errorf("%w (no request sent)", err)
	}
	r.err = err
	return r
}
