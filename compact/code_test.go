package compact_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// TestErrorCode: the engine's errors carry their code through wrapping, as the store's do
// (memory.ErrorCode); a context still over the limit wins over a failed summary in a join.
func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want memory.Code
	}{
		{compact.ErrOverLimit, memory.CodeOverLimit},
		{compact.ErrSummarize, memory.CodeUnavailable},
		// A summary that failed, then a context still over the limit (job.reshape joins both):
		// over_limit, whichever comes first in the join.
		{errors.Join(fmt.Errorf("%w: every provider failed", compact.ErrSummarize), fmt.Errorf("%w: 9000 tokens, limit 8000", compact.ErrOverLimit)), memory.CodeOverLimit},
		{errors.Join(compact.ErrOverLimit, compact.ErrSummarize), memory.CodeOverLimit},
	} {
		if got := memory.ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestNewErrorIsItsOwn: ErrOverLimit and ErrSummarize, made by memory.NewError, are told apart
// as before, and another error of the same code is not ErrOverLimit.
func TestNewErrorIsItsOwn(t *testing.T) {
	a := memory.NewError(memory.CodeOverLimit, "a")
	if errors.Is(compact.ErrOverLimit, compact.ErrSummarize) || errors.Is(compact.ErrSummarize, compact.ErrOverLimit) {
		t.Error("ErrOverLimit and ErrSummarize match each other")
	}
	if errors.Is(a, compact.ErrOverLimit) || !errors.Is(fmt.Errorf("%w: 3 tokens", compact.ErrOverLimit), compact.ErrOverLimit) {
		t.Error("errors.Is(a, ErrOverLimit) true, or a wrapped ErrOverLimit is not ErrOverLimit")
	}
}
