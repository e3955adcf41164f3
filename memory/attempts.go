package memory

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/memcascade/memcascade/db"
)

// The attempt log (cascade_attempts) is written by the provider cascade, which keeps it in the
// store's database; the store reads it: every attempt whole (Store.Attempts,
// Store.CompactionAttempts), a compaction's in its report (Report.Attempts, Report.Usage).

// Attempt is one row of the attempt log, as `memctl attempts` and `memctl report` show it.
type Attempt struct {
	ID               int64  `json:"id"`
	CompactionID     *int64 `json:"compaction_id"` // nil: not part of a compaction
	Provider         string `json:"provider"`
	Model            string `json:"model"`
	Outcome          string `json:"outcome"` // one of cascade's Outcome* constants
	HTTPStatus       int    `json:"http_status"`
	ErrorClass       string `json:"error_class"`
	Error            string `json:"error"` // redacted
	DurationMs       int64  `json:"duration_ms"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// UsageEstimated: the server sent no usage; the tokens were counted locally.
	UsageEstimated bool `json:"usage_estimated"`
	// Cost is what the tokens cost in dollars at the provider's price (price_per_mtok),
	// stored to the micro-dollar; nil (omitted in JSON) for a provider without a price and
	// for a skip (no request was sent).
	Cost      *float64  `json:"cost,omitempty"`
	StartedAt time.Time `json:"started_at"` // UTC
}

// AttemptView is the part of an Attempt a compaction's report shows (Report.Attempts): the
// JSON of `memctl compact --json` has these fields only, and omits an empty error.
type AttemptView struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"http_status"`
	ErrorClass string `json:"error_class"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"duration_ms"`
	// Cost is the attempt's (Attempt.Cost); omitted when it has none.
	Cost *float64 `json:"cost,omitempty"`
}

// view is the part of a that a compaction's report shows.
func (a Attempt) view() AttemptView {
	return AttemptView{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, HTTPStatus: a.HTTPStatus,
		ErrorClass: a.ErrorClass, Error: a.Error, DurationMs: a.DurationMs, Cost: a.Cost}
}

// Usage is what one compaction's provider requests cost, summed over its attempts.
type Usage struct {
	// Requests counts the requests sent: attempts whose outcome is ok or error (skips send
	// none).
	Requests int `json:"requests"`
	// PromptTokens and CompletionTokens sum the attempts' tokens: those the servers reported,
	// else counted locally.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Estimated is true when some of those tokens were counted locally because a server sent
	// no usage.
	Estimated bool `json:"estimated"`
	// Cost sums the cost in dollars of the attempts of providers with a price; nil (omitted
	// in JSON) when none of its attempts was priced.
	Cost *float64 `json:"cost,omitempty"`
}

// Attempts reads the attempt log newest first: every provider's when provider is "", at most
// limit rows (limit <= 0: all).
func (s *Store) Attempts(ctx context.Context, provider string, limit int) ([]Attempt, error) {
	maxRows := int64(limit)
	if limit <= 0 {
		maxRows = -1 // no limit
	}
	rows, err := s.h.Q().ListAttempts(ctx, db.ListAttemptsParams{Provider: provider, MaxRows: maxRows})
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return attemptsOf(rows), nil
}

// CompactionAttempts reads the attempts made for compaction id, oldest first.
func (s *Store) CompactionAttempts(ctx context.Context, id int64) ([]Attempt, error) {
	rows, err := s.h.Q().ListCompactionAttempts(ctx, sql.NullInt64{Int64: id, Valid: true})
	if err != nil {
		return nil, fmt.Errorf("list attempts of compaction %d: %w", id, err)
	}
	return attemptsOf(rows), nil
}

// attemptsOf decodes rows of the attempt log: the one decoding of a cascade_attempts row.
func attemptsOf(rows []db.CascadeAttempt) []Attempt {
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		a := Attempt{
			ID:               r.ID,
			Provider:         r.Provider,
			Model:            r.Model,
			Outcome:          r.Outcome,
			HTTPStatus:       int(r.HttpStatus),
			ErrorClass:       r.ErrorClass,
			Error:            r.Error,
			DurationMs:       r.DurationMs,
			PromptTokens:     int(r.PromptTokens),
			CompletionTokens: int(r.CompletionTokens),
			UsageEstimated:   r.UsageEstimated != 0,
			Cost:             dollarsOf(r.CostMicros),
			StartedAt:        time.UnixMilli(r.StartedAt).UTC(),
		}
		if r.CompactionID.Valid {
			id := r.CompactionID.Int64
			a.CompactionID = &id
		}
		out[i] = a
	}
	return out
}

// usageOf sums the usage of compaction id's attempts: the one reader of a compaction's usage.
func usageOf(ctx context.Context, q db.Querier, id int64) (Usage, error) {
	r, err := q.CompactionUsage(ctx, sql.NullInt64{Int64: id, Valid: true})
	return usageFrom(r), err
}

// usageFrom decodes a CompactionUsage row.
func usageFrom(r db.CompactionUsageRow) Usage {
	return Usage{Requests: int(r.Requests), PromptTokens: int(r.PromptTokens), CompletionTokens: int(r.CompletionTokens),
		Estimated: r.Estimated != 0, Cost: dollarsOf(sumOf(r.CostMicros, r.Priced))}
}
