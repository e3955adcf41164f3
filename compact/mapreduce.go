package compact

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/transcript"
)

// mapReduce summarizes the middle for a provider that serves several requests at once
// (llm.Target.Concurrency > 1): each part is summarized on its own, up to Concurrency at a
// time, and the part summaries are then merged, in rounds while they do not fit one request.
// Parts carry no running summary, so they are larger than the running summary's: fewer
// requests, and all but the merges run in parallel. An llm.ErrContextLength answer is returned
// as is: the caller falls back to the running summary, which re-splits.
func (in *input) mapReduce(ctx context.Context, t llm.Target, comp llm.Completer, r shape) (string, error) {
	bl, parts, err := in.mapSplit(t, r)
	if err != nil {
		return "", err
	}
	if len(parts) == 1 {
		resp, err := in.request(ctx, t, comp, r, bl, parts, 0, "")
		if err != nil {
			return "", err
		}
		return in.c.redact(strings.TrimSpace(resp.Text)), nil
	}
	texts, err := in.mapSend(ctx, t, comp, r, bl, parts)
	if err != nil {
		return "", err
	}
	return in.reduce(ctx, t, comp, r, texts)
}

// mapParts summarizes the middle in parts sized to provider t's window, each on its own, up to
// Concurrency at a time (a part cascade's task: none of them is the final summary).
func (in *input) mapParts(ctx context.Context, t llm.Target, comp llm.Completer, r shape) ([]string, error) {
	bl, parts, err := in.mapSplit(t, r)
	if err != nil {
		return nil, err
	}
	return in.mapSend(ctx, t, comp, r, bl, parts)
}

// mapSend sends each part of bl on its own, up to t.Concurrency at a time, and returns their
// summaries, redacted, in order.
func (in *input) mapSend(ctx context.Context, t llm.Target, comp llm.Completer, r shape, bl []block, parts []part) ([]string, error) {
	texts := make([]string, len(parts))
	errs := make([]error, len(parts))
	sem := make(chan struct{}, max(t.Concurrency, 1))
	var wg sync.WaitGroup
	for k := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			text, tms, previous := in.partData(bl, parts[k], !transcriptOnly(comp))
			resp, err := in.send(ctx, t, comp, r, text, tms, k, len(parts), "", previous, false)
			texts[k], errs[k] = in.c.redact(strings.TrimSpace(resp.Text)), err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return texts, nil
}

// mapSplit cuts the middle into parts that need no room for a running summary.
func (in *input) mapSplit(t llm.Target, r shape) ([]block, []part, error) {
	if r.limit <= 0 {
		return in.blocks, split(in.blocks, in.units, 0), nil
	}
	if r.limit < minChunkTokens {
		return nil, nil, fmt.Errorf("%w: a window of %d tokens leaves %d for the transcript beside the instructions (%d) and the answer (%d); a request needs %d",
			llm.ErrWindowTooSmall, t.ContextWindow, r.limit, r.systemTokens, r.out, minChunkTokens)
	}
	in.sizeBlocks()
	bl := fitBlocks(in.blocks, in.tms, r.limit, in.counter.CountText)
	return bl, split(bl, in.units, r.limit), nil
}

// reduce merges part summaries: as many as fit one request are folded into one summary, in
// rounds, the last request checked against the summary's budget.
func (in *input) reduce(ctx context.Context, t llm.Target, comp llm.Completer, r shape, texts []string) (string, error) {
	for {
		msgs := make([]transcript.Message, len(texts))
		blocks := make([]block, len(texts))
		for i, text := range texts {
			msgs[i] = transcript.Message{Role: transcript.RoleSummary, Text: text}
			var sb strings.Builder
			transcript.RenderMessage(&sb, msgs[i], transcript.Options{})
			blocks[i] = block{text: sb.String(), tokens: in.counter.CountText(sb.String()) + 1}
		}
		units := make([]int, len(texts))
		for i := range units {
			units[i] = i // each summary is a unit of its own
		}
		groups := split(blocks, units, r.limit)
		merged := make([]string, len(groups))
		for g, p := range groups {
			final := len(groups) == 1
			resp, err := in.send(ctx, t, comp, r, p.text(blocks), msgs[p.from:p.to], g, len(groups), "", "", final)
			if err != nil {
				return "", err
			}
			merged[g] = in.c.redact(strings.TrimSpace(resp.Text))
		}
		if len(merged) == 1 {
			return merged[0], nil
		}
		if len(merged) >= len(texts) {
			// No group holds two summaries: the window cannot merge them.
			return "", llm.ErrContextLength
		}
		texts = merged
	}
}
