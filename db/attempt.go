package db

import "time"

// Attempt is one row of the attempt log (cascade_attempts), decoded once for every reader:
// cascade shows it as it is (`memctl attempts`, `memctl report`; cascade.Attempt is this type),
// and memory's compaction report shows a few of its fields (memory.Attempt, a view made from
// this type).
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
