package memory_test

import (
	"errors"
	"fmt"
	"testing"

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
		{memory.ErrOverLimit, memory.CodeOverLimit},
		{memory.ErrSummarize, memory.CodeUnavailable},
	} {
		if got := memory.ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
