package compact

import (
	"strconv"
	"time"
)

// The keys of the compaction section a thread may set beside the limits, the strategy and the
// knobs (knobs.go): summary_max_tokens, summary_role, max_passes, total_timeout,
// emergency_ratio, on_failure, prompt_file, max_failures, cascade, part_cascade, queue_size and
// max_cost. This file
// holds how ThreadSettings applies, merges, clears and shows them. attempt_timeout is the
// cascade's, not a compaction's: it is set in the config file only.

// Keys of the other settings, as the config file, the stored thread settings and SettingError
// name them (KeyMaxFailures, KeyCascade, KeyPartCascade, KeyQueueSize and KeyMaxCost are declared with
// their rules).
const (
	KeySummaryMaxTokens = "summary_max_tokens"
	KeySummaryRole      = "summary_role"
	KeyMaxPasses        = "max_passes"
	KeyTotalTimeout     = "total_timeout"
	KeyEmergencyRatio   = "emergency_ratio"
	KeyOnFailure        = "on_failure"
	KeyPromptFile       = "prompt_file"
)

// moreKeys are those keys, in the order they are shown.
var moreKeys = []string{KeySummaryMaxTokens, KeySummaryRole, KeyMaxPasses, KeyTotalTimeout, KeyEmergencyRatio,
	KeyOnFailure, KeyPromptFile, KeyMaxFailures, KeyCascade, KeyPartCascade, KeyQueueSize, KeyMaxCost}

// checkTimeout refuses a total_timeout that is no positive duration.
func (t ThreadSettings) checkTimeout() error {
	if t.TotalTimeout == "" {
		return nil
	}
	d, err := time.ParseDuration(t.TotalTimeout)
	if err != nil || d <= 0 {
		return &SettingError{Key: KeyTotalTimeout, Value: strconv.Quote(t.TotalTimeout), Rule: "is not a positive duration (e.g. \"10m\")",
			Msg: KeyTotalTimeout + " " + strconv.Quote(t.TotalTimeout) + " is not a positive duration (e.g. \"10m\")"}
	}
	return nil
}

// applyMore returns s with the other settings t sets in place of its own.
func (t ThreadSettings) applyMore(s Settings) Settings {
	if t.SummaryMaxTokens != nil {
		s.SummaryMaxTokens = *t.SummaryMaxTokens
	}
	if t.SummaryRole != "" {
		s.SummaryRole = t.SummaryRole
	}
	if t.MaxPasses != nil {
		s.MaxPasses = *t.MaxPasses
	}
	if d, err := time.ParseDuration(t.TotalTimeout); err == nil && t.TotalTimeout != "" { // checked by Validate
		s.TotalTimeout = d
	}
	if t.EmergencyRatio != nil {
		s.EmergencyRatio = *t.EmergencyRatio
	}
	if t.OnFailure != "" {
		s.OnFailure = t.OnFailure
	}
	if t.Prompt != "" {
		s.Prompt = t.Prompt
	}
	if t.MaxFailures != nil {
		s.MaxFailures = *t.MaxFailures
	}
	if t.Cascade != "" {
		s.Cascade = t.Cascade
	}
	if t.PartCascade != "" {
		s.PartCascade = t.PartCascade
	}
	if t.QueueSize != nil {
		s.QueueSize = *t.QueueSize
	}
	if t.MaxCost != nil {
		s.MaxCost = *t.MaxCost
	}
	return s
}

// overMore returns t with the other settings o sets in place of its own (o wins).
func (t ThreadSettings) overMore(o ThreadSettings) ThreadSettings {
	if o.SummaryMaxTokens != nil {
		t.SummaryMaxTokens = o.SummaryMaxTokens
	}
	if o.SummaryRole != "" {
		t.SummaryRole = o.SummaryRole
	}
	if o.MaxPasses != nil {
		t.MaxPasses = o.MaxPasses
	}
	if o.TotalTimeout != "" {
		t.TotalTimeout = o.TotalTimeout
	}
	if o.EmergencyRatio != nil {
		t.EmergencyRatio = o.EmergencyRatio
	}
	if o.OnFailure != "" {
		t.OnFailure = o.OnFailure
	}
	if o.Prompt != "" {
		t.Prompt, t.PromptFile = o.Prompt, o.PromptFile
	}
	if o.MaxFailures != nil {
		t.MaxFailures = o.MaxFailures
	}
	if o.Cascade != "" {
		t.Cascade = o.Cascade
	}
	if o.PartCascade != "" {
		t.PartCascade = o.PartCascade
	}
	if o.QueueSize != nil {
		t.QueueSize = o.QueueSize
	}
	if o.MaxCost != nil {
		t.MaxCost = o.MaxCost
	}
	return t
}

// unsetMore clears the other setting named by key; false when key names none of them.
func (t *ThreadSettings) unsetMore(key string) bool {
	switch key {
	case KeySummaryMaxTokens:
		t.SummaryMaxTokens = nil
	case KeySummaryRole:
		t.SummaryRole = ""
	case KeyMaxPasses:
		t.MaxPasses = nil
	case KeyTotalTimeout:
		t.TotalTimeout = ""
	case KeyEmergencyRatio:
		t.EmergencyRatio = nil
	case KeyOnFailure:
		t.OnFailure = ""
	case KeyPromptFile:
		t.Prompt, t.PromptFile = "", ""
	case KeyMaxFailures:
		t.MaxFailures = nil
	case KeyCascade:
		t.Cascade = ""
	case KeyPartCascade:
		t.PartCascade = ""
	case KeyQueueSize:
		t.QueueSize = nil
	case KeyMaxCost:
		t.MaxCost = nil
	default:
		return false
	}
	return true
}

// Has reports whether the thread settings set the setting named by key (one of
// ThreadSettingKeys), for a listing that says where a value comes from.
func (t ThreadSettings) Has(key string) bool {
	switch key {
	case KeyTokenLimit:
		return t.TokenLimit != nil
	case KeyTargetRatio:
		return t.TargetRatio != nil
	case KeyTriggerRatio:
		return t.TriggerRatio != nil
	case KeyReserveTokens:
		return t.ReserveTokens != nil
	case KeyStrategy:
		return t.Strategy != ""
	case KeyModel:
		return t.Model != ""
	case KeySummaryMaxTokens:
		return t.SummaryMaxTokens != nil
	case KeySummaryRole:
		return t.SummaryRole != ""
	case KeyMaxPasses:
		return t.MaxPasses != nil
	case KeyTotalTimeout:
		return t.TotalTimeout != ""
	case KeyEmergencyRatio:
		return t.EmergencyRatio != nil
	case KeyOnFailure:
		return t.OnFailure != ""
	case KeyPromptFile:
		return t.Prompt != ""
	case KeyMaxFailures:
		return t.MaxFailures != nil
	case KeyCascade:
		return t.Cascade != ""
	case KeyPartCascade:
		return t.PartCascade != ""
	case KeyQueueSize:
		return t.QueueSize != nil
	case KeyMaxCost:
		return t.MaxCost != nil
	}
	return t.KnobSet(key)
}

// Value is the value of the setting named by key (one of ThreadSettingKeys but model) in s, as
// a listing shows it; prompt_file shows whether the prompt is the built-in one, and its size.
func (s Settings) Value(key string) string {
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch key {
	case KeyTokenLimit:
		return strconv.Itoa(s.TokenLimit)
	case KeyTargetRatio:
		return ratio(s.TargetRatio)
	case KeyTriggerRatio:
		return ratio(s.TriggerRatio)
	case KeyReserveTokens:
		return strconv.Itoa(s.ReserveTokens)
	case KeyStrategy:
		return s.Strategy
	case KeySummaryMaxTokens:
		return strconv.Itoa(s.SummaryMaxTokens)
	case KeySummaryRole:
		return s.SummaryRole
	case KeyMaxPasses:
		return strconv.Itoa(s.MaxPasses)
	case KeyTotalTimeout:
		return s.TotalTimeout.String()
	case KeyEmergencyRatio:
		return ratio(s.EmergencyRatio)
	case KeyOnFailure:
		return s.OnFailure
	case KeyPromptFile:
		if s.Prompt == "" {
			return "built-in"
		}
		return "own (" + strconv.Itoa(len(s.Prompt)) + " bytes)"
	case KeyMaxFailures:
		return strconv.Itoa(s.MaxFailures)
	case KeyCascade:
		return s.Cascade
	case KeyPartCascade:
		return s.PartCascade
	case KeyQueueSize:
		return strconv.Itoa(s.QueueSize)
	case KeyMaxCost:
		return ratio(s.MaxCost)
	}
	return s.KnobValue(key)
}
