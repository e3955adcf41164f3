package memory_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// TestErrorCode: the errors callers tell apart carry their code through wrapping; an unknown
// error is internal, nil has none.
func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want memory.Code
	}{
		{nil, ""},
		{errors.New("disk full"), memory.CodeInternal},
		{fmt.Errorf("show %q: %w", "t", memory.ErrThreadNotFound), memory.CodeNotFound},
		{fmt.Errorf("%w: 3", memory.ErrCompactionNotFound), memory.CodeNotFound},
		{memory.ErrMessageNotFound, memory.CodeNotFound},
		{memory.ErrNotPinned, memory.CodeNotFound},
		{memory.ErrPinRefused, memory.CodeConflict},
		{fmt.Errorf("%w: compaction 2", memory.ErrNotLatest), memory.CodeConflict},
		{memory.ErrConflict, memory.CodeConflict},
		{memory.ErrStale, memory.CodeConflict},
		{fmt.Errorf("import: %w", &memory.InputError{Msg: "bad"}), memory.CodeInvalid},
		{&memory.SettingError{}, memory.CodeInvalid},
		{memory.ErrNoMessages, memory.CodeInvalid},
		{compact.ErrOverLimit, memory.CodeOverLimit},
		{compact.ErrSummarize, memory.CodeUnavailable},
		{memory.NewError(memory.CodeOverLimit, "over"), memory.CodeOverLimit},
		{fmt.Errorf("run: %w", memory.NewError(memory.CodeUnavailable, "no provider")), memory.CodeUnavailable},
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

// TestNewErrorIsItsOwn: an error NewError makes is itself and not another of the same code;
// ErrOverLimit and ErrSummarize are told apart as before.
func TestNewErrorIsItsOwn(t *testing.T) {
	a, b := memory.NewError(memory.CodeOverLimit, "a"), memory.NewError(memory.CodeOverLimit, "a")
	if !errors.Is(fmt.Errorf("x: %w", a), a) || errors.Is(a, b) || a.Error() != "a" {
		t.Errorf("NewError: errors.Is(wrapped a, a) false, or errors.Is(a, b) true, or text %q", a.Error())
	}
	if errors.Is(compact.ErrOverLimit, compact.ErrSummarize) || errors.Is(compact.ErrSummarize, compact.ErrOverLimit) {
		t.Error("ErrOverLimit and ErrSummarize match each other")
	}
	if errors.Is(a, compact.ErrOverLimit) || !errors.Is(fmt.Errorf("%w: 3 tokens", compact.ErrOverLimit), compact.ErrOverLimit) {
		t.Error("errors.Is(a, ErrOverLimit) true, or a wrapped ErrOverLimit is not ErrOverLimit")
	}
}
