package db

import "time"

// Attempt is one row of the attempt log (cascade_attempts), decoded once for every reader:
// cascade shows it as it is (`memctl attempts`, `memctl report`; cascade.Attempt is this type),
// and memory's compaction report shows a few of its fields (AttemptView, which memory.Attempt
// is).
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
	UsageEstimated bool      `json:"usage_estimated"`
	StartedAt      time.Time `json:"started_at"` // UTC
}

// Attempts decodes rows of cascade_attempts.
func Attempts(rows []CascadeAttempt) []Attempt {
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

// AttemptView is the part of an Attempt a compaction's report shows (memory.Attempt is this
// type): the JSON of `memctl compact --json` has these fields only, and omits an empty error.
type AttemptView struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"http_status"`
	ErrorClass string `json:"error_class"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"duration_ms"`
}

// View is the part of a that a compaction's report shows.
func (a Attempt) View() AttemptView {
	return AttemptView{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, HTTPStatus: a.HTTPStatus,
		ErrorClass: a.ErrorClass, Error: a.Error, DurationMs: a.DurationMs}
}

// Usage is what one compaction's provider requests cost, summed over its attempts
// (memory.Usage and cascade.Usage are this type).
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
}

// UsageOf decodes a CompactionUsage row.
func UsageOf(r CompactionUsageRow) Usage {
	return Usage{Requests: int(r.Requests), PromptTokens: int(r.PromptTokens), CompletionTokens: int(r.CompletionTokens),
		Estimated: r.Estimated != 0}
}
