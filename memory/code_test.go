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
		{&compact.SettingError{}, memory.CodeInvalid},
		{memory.ErrNoMessages, memory.CodeInvalid},
		{memory.NewError(memory.CodeOverLimit, "over"), memory.CodeOverLimit},
		{fmt.Errorf("run: %w", memory.NewError(memory.CodeUnavailable, "no provider")), memory.CodeUnavailable},
		// every code NewError is given is found, not only the two the compactor uses
		{memory.NewError(memory.CodeConflict, "taken"), memory.CodeConflict},
		{fmt.Errorf("get: %w", memory.NewError(memory.CodeNotFound, "gone")), memory.CodeNotFound},
		{memory.NewError(memory.CodeInternal, "disk"), memory.CodeInternal},
		{errors.Join(memory.NewError(memory.CodeUnavailable, "no provider"), memory.NewError(memory.CodeOverLimit, "over")), memory.CodeOverLimit},
	} {
		if got := memory.ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestNewErrorIsItsOwn: an error NewError makes is itself and not another of the same code.
func TestNewErrorIsItsOwn(t *testing.T) {
	a, b := memory.NewError(memory.CodeOverLimit, "a"), memory.NewError(memory.CodeOverLimit, "a")
	if !errors.Is(fmt.Errorf("x: %w", a), a) || errors.Is(a, b) || a.Error() != "a" {
		t.Errorf("NewError: errors.Is(wrapped a, a) false, or errors.Is(a, b) true, or text %q", a.Error())
	}
}
