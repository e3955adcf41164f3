package cascade

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/memcascade/memcascade/db"
)

// dbTimeout bounds the reads and writes of cooldowns and of the attempt log. They outlive
// the caller's deadline (and writes its cancellation too), so that an offline rung tried
// after the deadline and an attempt that was interrupted are still recorded.
const dbTimeout = 10 * time.Second

// cooldownFor is max(retryAfter, Cooldown × 2^(failures−1)), capped at MaxCooldown.
func (e *Entry) cooldownFor(failures int64, retryAfter time.Duration) time.Duration {
	base, ceiling := e.Cooldown, e.MaxCooldown
	if base <= 0 {
		base = DefaultCooldown
	}
	if ceiling <= 0 {
		ceiling = DefaultMaxCooldown
	}
	d := base
	for i := int64(1); i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(max(d, retryAfter), ceiling)
}

// cooldownRow reads a provider's cooldown state; a provider never seen has the zero row. A
// deadline that passed does not stop the read; a cancel does.
func (c *Cascade) cooldownRow(ctx context.Context, name string) (db.ProviderCooldown, error) {
	if canceled(ctx) {
		return db.ProviderCooldown{}, ctx.Err()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	row, err := c.db.Q().GetCooldown(rctx, name)
	if errors.Is(err, sql.ErrNoRows) {
		return db.ProviderCooldown{Provider: name}, nil
	}
	return row, err
}

// recordFailure counts a failure and sets the cooldown, in one transaction so that two
// processes failing at once both count. It returns the end of the cooldown.
func (c *Cascade) recordFailure(ctx context.Context, e *Entry, pe *ProviderError) (time.Time, error) {
	var until time.Time
	var failures int64
	err := c.write(ctx, func(q db.Querier, wctx context.Context) error {
		row, err := q.GetCooldown(wctx, e.Name)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		failures = row.ConsecutiveFailures + 1
		now := c.now()
		until = now.Add(e.cooldownFor(failures, pe.RetryAfter))
		return q.UpsertCooldown(wctx, db.UpsertCooldownParams{
			Provider:            e.Name,
			CoolingUntil:        until.UnixMilli(),
			ConsecutiveFailures: failures,
			LastError:           pe.detail(),
			UpdatedAt:           now.UnixMilli(),
		})
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("cascade: record cooldown of %s: %w", e.Name, err)
	}
	c.logAttrs(ctx, slog.LevelWarn, "provider cooling down", slog.String("provider", e.Name),
		slog.String("class", string(pe.Class)), slog.Int64("failures", failures), slog.Time("cooling_until", until.UTC()))
	return until, nil
}

// reset clears a provider's cooldown state after a success. read is the row read before the
// turn; when it and a fresh read are clear there is nothing to write.
func (c *Cascade) reset(ctx context.Context, name string, read db.ProviderCooldown) error {
	if read.ConsecutiveFailures == 0 && read.CoolingUntil == 0 {
		fresh, err := c.cooldownRow(ctx, name)
		if err == nil && fresh.ConsecutiveFailures == 0 && fresh.CoolingUntil == 0 {
			return nil
		}
	}
	err := c.write(ctx, func(q db.Querier, wctx context.Context) error {
		return q.UpsertCooldown(wctx, db.UpsertCooldownParams{Provider: name, UpdatedAt: c.now().UnixMilli()})
	})
	if err != nil {
		return fmt.Errorf("cascade: reset cooldown of %s: %w", name, err)
	}
	c.logAttrs(ctx, slog.LevelInfo, "provider cooldown cleared", slog.String("provider", name), slog.String("reason", "success"))
	return nil
}

// ErrUnknownProvider: ResetCooldown was given a name that is neither an entry of the cascade
// nor a provider with stored cooldown state.
var ErrUnknownProvider = errors.New("unknown provider")

// ResetCooldown clears a provider's cooldown and failure count (after its server was fixed):
// the next Run tries it at once. It reports whether there was anything to clear. name must be
// an entry of the cascade or a provider with stored state, else ErrUnknownProvider.
func (c *Cascade) ResetCooldown(ctx context.Context, name string) (bool, error) {
	var n int64
	err := c.db.WithTx(ctx, func(q db.Querier) error {
		row, err := q.GetCooldown(ctx, name)
		if errors.Is(err, sql.ErrNoRows) {
			for _, e := range c.Entries {
				if e.Name == name {
					return nil // never failed: nothing to clear
				}
			}
			return fmt.Errorf("%w %q: not in the cascade, no cooldown stored", ErrUnknownProvider, name)
		}
		if err != nil {
			return err
		}
		if row.CoolingUntil == 0 && row.ConsecutiveFailures == 0 && row.LastError == "" {
			return nil
		}
		n, err = q.ResetCooldown(ctx, db.ResetCooldownParams{UpdatedAt: c.now().UnixMilli(), Provider: name})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cascade: reset cooldown of %s: %w", name, err)
	}
	if n > 0 {
		c.logAttrs(ctx, slog.LevelInfo, "provider cooldown cleared", slog.String("provider", name), slog.String("reason", "reset"))
	}
	return n > 0, nil
}

// ResetCooldowns clears the cooldown and failure count of every provider with stored state,
// in the cascade or not, and returns how many had something to clear.
func (c *Cascade) ResetCooldowns(ctx context.Context) (int64, error) {
	var n int64
	err := c.db.WithTx(ctx, func(q db.Querier) error {
		var err error
		n, err = q.ResetAllCooldowns(ctx, c.now().UnixMilli())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cascade: reset cooldowns: %w", err)
	}
	if n > 0 {
		c.logAttrs(ctx, slog.LevelInfo, "provider cooldowns cleared", slog.Int64("providers", n), slog.String("reason", "reset"))
	}
	return n, nil
}

// logSkip records a provider left out without a request.
func (c *Cascade) logSkip(ctx context.Context, compactionID int64, e *Entry, outcome Outcome, pe *ProviderError) error {
	err := c.insertAttempt(ctx, db.InsertAttemptParams{
		CompactionID: nullID(compactionID),
		Provider:     e.Name,
		Model:        e.Model,
		StartedAt:    c.now().UnixMilli(),
		Outcome:      string(outcome),
		Error:        pe.detail(),
	})
	if err != nil {
		return fmt.Errorf("cascade: record skip of %s: %w", e.Name, err)
	}
	return nil
}

// insertAttempt adds one row to the attempt log, and logs it.
func (c *Cascade) insertAttempt(ctx context.Context, row db.InsertAttemptParams) error {
	err := c.write(ctx, func(q db.Querier, wctx context.Context) error {
		_, err := q.InsertAttempt(wctx, row)
		return err
	})
	if err == nil {
		c.logAttempt(ctx, row)
	}
	return err
}

// logAttempt logs one attempt: an error at warn, a success or a skip at info. The error
// text is the stored one, already redacted.
func (c *Cascade) logAttempt(ctx context.Context, row db.InsertAttemptParams) {
	level := slog.LevelInfo
	if Outcome(row.Outcome) == OutcomeError {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("provider", row.Provider), slog.String("model", row.Model),
		slog.Int64("compaction_id", row.CompactionID.Int64), slog.String("outcome", row.Outcome),
		slog.Int64("duration_ms", row.DurationMs),
	}
	if Outcome(row.Outcome) == OutcomeError {
		attrs = append(attrs, slog.Int64("http_status", row.HttpStatus), slog.String("class", row.ErrorClass))
	}
	if row.Error != "" {
		attrs = append(attrs, slog.String("error", row.Error))
	}
	if row.CostMicros.Valid {
		attrs = append(attrs, slog.Int64("cost_micros", row.CostMicros.Int64))
	}
	c.logAttrs(ctx, level, "provider attempt", attrs...)
}

// logAttrs writes one record to Logger (nil: nothing).
func (c *Cascade) logAttrs(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if c.opt.Logger == nil {
		return
	}
	c.opt.Logger.LogAttrs(context.WithoutCancel(ctx), level, msg, attrs...)
}

// write runs fn in a write transaction. It outlives the caller's cancellation (bounded by
// dbTimeout): an interrupted attempt is still logged.
func (c *Cascade) write(ctx context.Context, fn func(q db.Querier, ctx context.Context) error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	return c.db.WithTx(wctx, func(q db.Querier) error {
		return fn(q, wctx)
	})
}

func nullID(id int64) sql.NullInt64 {
	return sql.NullInt64{Int64: id, Valid: id != 0}
}
