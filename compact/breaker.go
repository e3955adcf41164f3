package compact

import (
	"context"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

// The breaker: after max_failures failed compactions of a thread in a row (a compaction whose
// every provider was cooling down fails too), the thread is held: a compaction that is not
// forced makes no provider request, and returns a report with status held and ErrHeld, until
// the thread's active context doubles since the hold, its limit, reserve or ratios change, or
// a forced compaction runs (memctl compact --force). Nothing is stored for it: the streak is
// read from the thread's newest compaction rows, and the hold began with the newest of them.

// KeyMaxFailures is the key of Settings.MaxFailures.
const KeyMaxFailures = "max_failures"

// ErrHeld: the thread is held after failed compactions in a row; nothing was sent or written.
var ErrHeld = memory.NewError(memory.CodeUnavailable, "thread held")

// maxErrorInDetail bounds the last failure's error quoted in a held report.
const maxErrorInDetail = 200

// Held returns why the breaker holds thread t, whose active context is t.ActiveTokens tokens,
// under settings s (filled: SettingsFor, Effective); "" when it does not. It reads the thread's
// newest s.MaxFailures compaction rows.
func Held(ctx context.Context, store *memory.Store, t memory.Thread, s Settings) (string, error) {
	return held(ctx, store, t.ID, t.ActiveTokens, s)
}

func held(ctx context.Context, store *memory.Store, thread string, tokens int, s Settings) (string, error) {
	n := s.MaxFailures
	if n <= 0 {
		n = DefaultMaxFailures
	}
	rows, err := store.Compactions().Recent(ctx, thread, n)
	if err != nil || len(rows) < n {
		return "", err
	}
	for _, r := range rows {
		if r.Status != memory.StatusFailed {
			return "", nil
		}
	}
	last := rows[0]
	if last.Limits != s.Limits() || tokens >= 2*last.TokensBefore {
		return "", nil // released: the settings changed, or the context doubled since the hold
	}
	cause := last.Error
	if len(cause) > maxErrorInDetail {
		cut := maxErrorInDetail
		for cut > 0 && !isRuneStart(cause[cut]) {
			cut--
		}
		cause = cause[:cut] + "…"
	}
	if cause != "" {
		cause = ": " + strings.ReplaceAll(cause, "\n", " ")
	}
	return fmt.Sprintf("the last %s of the thread failed (the newest, %d, at %d tokens%s); a compaction that is not forced makes no provider request until the active context reaches %d tokens or the limit, reserve or ratios change; `memctl compact --force %s` releases it",
		english.Count(n, "compaction", "compactions"), last.ID, last.TokensBefore, cause, 2*last.TokensBefore, thread), nil
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// hold returns the held report of j when the breaker holds its thread (ok true), with ErrHeld;
// nothing is written and no provider is asked.
func (j *job) hold(ctx context.Context) (memory.Report, bool, error) {
	why, err := held(ctx, j.c.Store, j.a.Thread.ID, j.a.Tokens, j.s)
	if err != nil {
		return *j.rep, true, fmt.Errorf("compact %q: %w", j.a.Thread.ID, err)
	}
	if why == "" {
		return memory.Report{}, false, nil
	}
	j.rep.Status, j.rep.Detail = StatusHeld, why
	j.c.afterHook(ctx, *j.rep)
	return *j.rep, true, fmt.Errorf("compact %q: %w: %s", j.a.Thread.ID, ErrHeld, why)
}
