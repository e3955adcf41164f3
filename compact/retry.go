package compact

import (
	"context"
	"fmt"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/memory"
)

// RetryShrink is the share of a refused context that a compact-and-retry fits it in when the
// refusal names no window: Retry's, and memctl serve's.
const RetryShrink = 2.0 / 3

// Retry is a library's compact-and-retry, what memctl serve does when its upstream refuses a
// prompt as too long. When err is such a refusal (cascade.Classify says context_length: an
// OpenAI-compatible error with code context_length_exceeded, llama.cpp's
// exceed_context_size_error, a 400 or 413 that says the input is too long, or
// llm.ErrContextLength), Retry compacts thread with reason emergency to a smaller limit, this
// call's only: the window the refusal names, scaled from the server's count to the thread's
// (Anthropic's "N tokens > W maximum", vLLM's and llama.cpp's forms), else 2/3 of the active
// context. retry is true when the active context is now smaller: send it again
// (Store.Active). For any other err Retry does nothing and retry is false; rep is the
// compaction's report (zero when none ran).
//
// A refusal that a compaction cannot cure (the system prompt and the newest turn alone are over
// the window) gives retry false with the report saying why: stop rather than loop.
func (c *Compactor) Retry(ctx context.Context, thread string, err error) (retry bool, rep memory.Report, _ error) {
	if class, _, _ := cascade.Classify(err); class != cascade.ClassContextLength {
		return false, memory.Report{}, nil
	}
	a, aerr := c.Store.Active(ctx, thread, memory.ReadOptions{Light: true})
	if aerr != nil {
		return false, memory.Report{}, fmt.Errorf("retry %q: %w", thread, aerr)
	}
	limit := retryLimit(a.Tokens, err)
	rep, cerr := c.Compact(ctx, thread, Options{Emergency: true, Override: ThreadSettings{TokenLimit: &limit}})
	if cerr != nil {
		return false, rep, cerr
	}
	return rep.Status == memory.StatusApplied && rep.TokensAfter < rep.TokensBefore, rep, nil
}

// retryLimit is the limit a retry of a refused context of tokens (counted here) fits: the
// window the refusal names in the thread's count, else RetryShrink of tokens; always under
// tokens.
func retryLimit(tokens int, err error) int {
	limit := int(float64(tokens) * RetryShrink)
	if n, w, ok := cascade.RefusalWindow([]byte(err.Error())); ok && tokens > 0 {
		limit = int(int64(w) * int64(tokens) / int64(n))
	}
	return max(min(limit, tokens-1), 1)
}
