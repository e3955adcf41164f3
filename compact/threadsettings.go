package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memcascade/memcascade/memory"
)

// ThreadSettings are the compaction settings stored on one thread. A nil or empty field is
// unset: the compactor's own setting applies. The order of precedence is a setting of the
// call (Options.Override, memctl's flags), then the thread's, then the compactor's
// Settings (the config file), then the built-in default.
type ThreadSettings struct {
	TokenLimit    *int     `json:"token_limit,omitempty"`
	TargetRatio   *float64 `json:"target_ratio,omitempty"`
	TriggerRatio  *float64 `json:"trigger_ratio,omitempty"`
	ReserveTokens *int     `json:"reserve_tokens,omitempty"`
	// Strategy is how the thread is compacted (see Settings.Strategy).
	Strategy string `json:"strategy,omitempty"`
	// Model is the model the thread runs against (it does not change the tokenizer that
	// counts the thread, fixed when the thread was created).
	Model string `json:"model,omitempty"`
	// KeepTurns, CompactEveryTurns and Mask are the turn and masking knobs (see knobs.go).
	KeepTurns         *int        `json:"keep_turns,omitempty"`
	CompactEveryTurns *int        `json:"compact_every_turns,omitempty"`
	Mask              *ThreadMask `json:"mask,omitempty"`
	// The other keys of the compaction section (see threadkeys.go).
	SummaryMaxTokens *int     `json:"summary_max_tokens,omitempty"`
	SummaryRole      string   `json:"summary_role,omitempty"`
	MaxPasses        *int     `json:"max_passes,omitempty"`
	TotalTimeout     string   `json:"total_timeout,omitempty"` // a duration, as time.ParseDuration reads it
	EmergencyRatio   *float64 `json:"emergency_ratio,omitempty"`
	OnFailure        string   `json:"on_failure,omitempty"`
	// PromptFile is the file Prompt was read from when it was set, shown; Prompt is its text,
	// what the thread's compactions use (the file is not read again).
	PromptFile  string `json:"prompt_file,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	MaxFailures *int   `json:"max_failures,omitempty"`
	// Cascade and PartCascade name the thread's cascades (see Settings.Cascade).
	Cascade     string `json:"cascade,omitempty"`
	PartCascade string `json:"part_cascade,omitempty"`
	// QueueSize is the queue strategy's; MaxCost the most a summary may cost, in dollars.
	QueueSize *int     `json:"queue_size,omitempty"`
	MaxCost   *float64 `json:"max_cost,omitempty"`
	// Window is the window a host learned of the thread's model (memctl serve under
	// token_limit auto). It is not a setting (Apply, Over, Unset and the keys ignore it): it is
	// recorded so that the limit and its origin can be shown, the calibration kept across
	// restarts, and a pin checked against it. The thread's own TokenLimit wins over it.
	Window *Window `json:"window,omitempty"`
}

// Window is the window a host fits a thread in when it learns the model's window
// (memctl serve under token_limit auto).
type Window struct {
	Model  string `json:"model"`  // the model of the requests
	Tokens int    `json:"tokens"` // the window the upstream reports (or the default assumed)
	Source string `json:"source"` // where it was read, or why it was assumed
	// Ratio is the upstream's count of a prompt over the local count (1 until measured).
	Ratio float64 `json:"ratio"`
	// Limit is the limit the thread is fitted in: Tokens / Ratio.
	Limit int `json:"limit"`
}

// Keys of ThreadSettings, as stored and as named by SettingError.
const (
	KeyTokenLimit    = "token_limit"
	KeyTargetRatio   = "target_ratio"
	KeyTriggerRatio  = "trigger_ratio"
	KeyReserveTokens = "reserve_tokens"
	KeyStrategy      = "strategy"
	KeyModel         = "model"
)

// ThreadSettingKeys are the keys of ThreadSettings, in the order they are shown.
var ThreadSettingKeys = slices.Concat([]string{KeyTokenLimit, KeyTargetRatio, KeyTriggerRatio, KeyReserveTokens, KeyStrategy, KeyModel}, moreKeys, knobKeys)

// maxModelBytes bounds the model name.
const maxModelBytes = 256

// Effective returns the settings a compaction uses: those the call sets (over), then those
// the thread sets, then s (the compactor's, from the config file), then the built-in defaults.
func Effective(s Settings, thread, over ThreadSettings) Settings {
	return thread.Over(over).Apply(s).WithDefaults()
}

// IsZero reports whether no setting is set.
func (t ThreadSettings) IsZero() bool {
	if t.Mask != nil && *t.Mask == (ThreadMask{}) {
		t.Mask = nil
	}
	return t == ThreadSettings{}
}

// Apply returns s with the settings t sets in place of its own.
func (t ThreadSettings) Apply(s Settings) Settings {
	if t.TokenLimit != nil {
		s.TokenLimit = *t.TokenLimit
	}
	if t.TargetRatio != nil {
		s.TargetRatio = *t.TargetRatio
	}
	if t.TriggerRatio != nil {
		s.TriggerRatio = *t.TriggerRatio
	}
	if t.ReserveTokens != nil {
		s.ReserveTokens = *t.ReserveTokens
	}
	if t.Strategy != "" {
		s.Strategy = t.Strategy
	}
	return t.applyKnobs(t.applyMore(s))
}

// Over returns t with the settings o sets in place of its own (o wins).
func (t ThreadSettings) Over(o ThreadSettings) ThreadSettings {
	if o.TokenLimit != nil {
		t.TokenLimit = o.TokenLimit
	}
	if o.TargetRatio != nil {
		t.TargetRatio = o.TargetRatio
	}
	if o.TriggerRatio != nil {
		t.TriggerRatio = o.TriggerRatio
	}
	if o.ReserveTokens != nil {
		t.ReserveTokens = o.ReserveTokens
	}
	if o.Strategy != "" {
		t.Strategy = o.Strategy
	}
	if o.Model != "" {
		t.Model = o.Model
	}
	return t.overMore(o).overKnobs(o)
}

// Unset clears the setting named by key; an unknown key is a *SettingError.
func (t *ThreadSettings) Unset(key string) error {
	switch key {
	case KeyTokenLimit:
		t.TokenLimit = nil
	case KeyTargetRatio:
		t.TargetRatio = nil
	case KeyTriggerRatio:
		t.TriggerRatio = nil
	case KeyReserveTokens:
		t.ReserveTokens = nil
	case KeyStrategy:
		t.Strategy = ""
	case KeyModel:
		t.Model = ""
	default:
		if t.unsetKnob(key) || t.unsetMore(key) {
			return nil
		}
		return settingErr(key, "unknown setting %q (want %s or %s)", key,
			strings.Join(ThreadSettingKeys[:len(ThreadSettingKeys)-1], ", "), ThreadSettingKeys[len(ThreadSettingKeys)-1])
	}
	return nil
}

// Validate reports a setting that is impossible whatever the settings it is combined with;
// the error is a *SettingError naming the key. The rules are those of Settings.Validate: an
// unset field takes the value that can conflict with none (so token_limit 1000 alone is valid,
// and token_limit 1000 with reserve_tokens 1000 is not). A combination with the compactor's
// settings is checked when it is used (Compact) or with Apply(s).Validate().
func (t ThreadSettings) Validate() error {
	s := Settings{TokenLimit: MaxTokenLimit, ReserveTokens: 0, TargetRatio: math.SmallestNonzeroFloat64, TriggerRatio: 1}.WithDefaults()
	if err := t.checkTimeout(); err != nil {
		return err
	}
	if err := t.Apply(s).check(); err != nil { // a 0 set on the thread is a value, not "the default"
		return err
	}
	if t.Model != "" {
		if !utf8.ValidString(t.Model) || len(t.Model) > maxModelBytes {
			return settingErr(KeyModel, "model must be valid UTF-8 of at most %d bytes", maxModelBytes)
		}
		for _, r := range t.Model {
			if unicode.IsControl(r) {
				return settingErr(KeyModel, "model %q has a control character", t.Model)
			}
		}
	}
	return nil
}

// ParseThreadSettings reads the settings a thread stores (memory.Thread.Settings, a JSON
// object; empty means none set).
func ParseThreadSettings(thread string, raw []byte) (ThreadSettings, error) {
	var t ThreadSettings
	if len(raw) == 0 {
		return t, nil
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("thread %q: stored settings: %w", thread, err)
	}
	return t, nil
}

// SettingsOf returns the settings stored on thread t, as read with it.
func SettingsOf(t memory.Thread) (ThreadSettings, error) {
	return ParseThreadSettings(t.ID, t.Settings)
}

// ThreadSettingsOf returns the settings stored on a thread (all unset for a thread that never
// had any).
func ThreadSettingsOf(ctx context.Context, store *memory.Store, thread string) (ThreadSettings, error) {
	t, err := store.Thread(ctx, thread)
	if err != nil {
		return ThreadSettings{}, err
	}
	return SettingsOf(t)
}

// SaveThreadSettings replaces the settings stored on a thread with t (a zero t clears them).
// An impossible setting is refused with a *SettingError and nothing is written. The thread's
// next Compactor.ShouldCompact and Compact use them.
func SaveThreadSettings(ctx context.Context, store *memory.Store, thread string, t ThreadSettings) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("thread %q: %w", thread, err)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return store.SetThreadSettings(ctx, thread, b)
}
