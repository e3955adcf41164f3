package compact

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The turn and masking knobs: keep_turns, compact_every_turns and the mask section
// (keep_tool_results, exclude_tools, clear_tool_inputs, clear_thinking). This file holds their
// settings, rules and thread keys; turns.go and maskknobs.go what they do.

// MaskSettings tune what the mask and hybrid strategies (and an emergency's mask) do to the part
// of the active context outside the kept window. The zero value is the default: the tool
// results outside the kept window are masked, nothing else is changed.
type MaskSettings struct {
	// KeepToolResults, when at least 1, keeps the newest KeepToolResults tool results verbatim
	// and masks the older ones, wherever the kept window starts (the results of the newest unit
	// and of the turns keep_turns keeps stay whatever the count). 0: the kept window decides.
	KeepToolResults int
	// ExcludeTools are tools whose results are never masked.
	ExcludeTools []string
	// ClearToolInputs replaces the arguments of the tool calls outside the kept window by a
	// placeholder in the view (the call's id and name stay): see ClearedArgs.
	ClearToolInputs bool
	// ClearThinking drops the reasoning of the assistant messages outside the kept window from
	// the view: the members reasoning_content, reasoning and thinking of an OpenAI-format
	// message, and the thinking blocks of an Anthropic message's original (see thinkingKeys).
	ClearThinking bool
}

// IsZero reports whether m is the default: no knob set.
func (m MaskSettings) IsZero() bool {
	return m.KeepToolResults == 0 && len(m.ExcludeTools) == 0 && !m.ClearToolInputs && !m.ClearThinking
}

// Keys of the knobs, as the config file, the stored thread settings and SettingError name them.
const (
	KeyKeepTurns         = "keep_turns"
	KeyCompactEveryTurns = "compact_every_turns"
	KeyMaskKeepResults   = "mask.keep_tool_results"
	KeyMaskExcludeTools  = "mask.exclude_tools"
	KeyMaskClearInputs   = "mask.clear_tool_inputs"
	KeyMaskClearThinking = "mask.clear_thinking"
)

// knobKeys are the knobs' keys, in the order they are shown.
var knobKeys = []string{KeyKeepTurns, KeyCompactEveryTurns, KeyMaskKeepResults, KeyMaskExcludeTools, KeyMaskClearInputs, KeyMaskClearThinking}

// maxToolNameBytes bounds a tool name of exclude_tools.
const maxToolNameBytes = 256

// knobProblems are the rules of the knobs (see Settings.Problems).
func (s Settings) knobProblems() []*SettingError {
	var ps []*SettingError
	notNegative := func(key string, v int) {
		if v < 0 {
			ps = append(ps, broken(key, strconv.Itoa(v), "must not be negative (0: off)"))
		}
	}
	notNegative(KeyKeepTurns, s.KeepTurns)
	notNegative(KeyCompactEveryTurns, s.CompactEveryTurns)
	notNegative(KeyMaskKeepResults, s.Mask.KeepToolResults)
	for i, name := range s.Mask.ExcludeTools {
		if p := toolNameProblem(name); p != "" {
			ps = append(ps, broken(KeyMaskExcludeTools+"["+strconv.Itoa(i)+"]", strconv.Quote(name), p))
		}
	}
	return ps
}

// toolNameProblem says what is wrong with a tool name of exclude_tools, "" when nothing is.
func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "is empty: want a tool's name"
	case !utf8.ValidString(name) || len(name) > maxToolNameBytes:
		return "must be valid UTF-8 of at most " + strconv.Itoa(maxToolNameBytes) + " bytes"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return "has a space or a control character: want a tool's name"
	}
	return ""
}

// ThreadMask are the mask knobs stored on a thread; a nil field is unset.
type ThreadMask struct {
	KeepToolResults *int      `json:"keep_tool_results,omitempty"`
	ExcludeTools    *[]string `json:"exclude_tools,omitempty"`
	ClearToolInputs *bool     `json:"clear_tool_inputs,omitempty"`
	ClearThinking   *bool     `json:"clear_thinking,omitempty"`
}

// applyKnobs returns s with the knobs t sets in place of its own.
func (t ThreadSettings) applyKnobs(s Settings) Settings {
	if t.KeepTurns != nil {
		s.KeepTurns = *t.KeepTurns
	}
	if t.CompactEveryTurns != nil {
		s.CompactEveryTurns = *t.CompactEveryTurns
	}
	if m := t.Mask; m != nil {
		if m.KeepToolResults != nil {
			s.Mask.KeepToolResults = *m.KeepToolResults
		}
		if m.ExcludeTools != nil {
			s.Mask.ExcludeTools = slices.Clone(*m.ExcludeTools)
		}
		if m.ClearToolInputs != nil {
			s.Mask.ClearToolInputs = *m.ClearToolInputs
		}
		if m.ClearThinking != nil {
			s.Mask.ClearThinking = *m.ClearThinking
		}
	}
	return s
}

// overKnobs returns t with the knobs o sets in place of its own.
func (t ThreadSettings) overKnobs(o ThreadSettings) ThreadSettings {
	if o.KeepTurns != nil {
		t.KeepTurns = o.KeepTurns
	}
	if o.CompactEveryTurns != nil {
		t.CompactEveryTurns = o.CompactEveryTurns
	}
	if o.Mask == nil {
		return t
	}
	m := ThreadMask{}
	if t.Mask != nil {
		m = *t.Mask
	}
	if o.Mask.KeepToolResults != nil {
		m.KeepToolResults = o.Mask.KeepToolResults
	}
	if o.Mask.ExcludeTools != nil {
		m.ExcludeTools = o.Mask.ExcludeTools
	}
	if o.Mask.ClearToolInputs != nil {
		m.ClearToolInputs = o.Mask.ClearToolInputs
	}
	if o.Mask.ClearThinking != nil {
		m.ClearThinking = o.Mask.ClearThinking
	}
	t.Mask = maskOrNil(m)
	return t
}

// maskOrNil is &m, nil when m sets nothing (so that a thread with no knob set IsZero).
func maskOrNil(m ThreadMask) *ThreadMask {
	if m == (ThreadMask{}) {
		return nil
	}
	return &m
}

// unsetKnob clears the knob named by key; false when key names no knob.
func (t *ThreadSettings) unsetKnob(key string) bool {
	m := ThreadMask{}
	if t.Mask != nil {
		m = *t.Mask
	}
	switch key {
	case KeyKeepTurns:
		t.KeepTurns = nil
	case KeyCompactEveryTurns:
		t.CompactEveryTurns = nil
	case KeyMaskKeepResults:
		m.KeepToolResults = nil
	case KeyMaskExcludeTools:
		m.ExcludeTools = nil
	case KeyMaskClearInputs:
		m.ClearToolInputs = nil
	case KeyMaskClearThinking:
		m.ClearThinking = nil
	default:
		return false
	}
	t.Mask = maskOrNil(m)
	return true
}

// KnobSet reports whether the thread settings set the knob named by key (one of the Key*
// constants of the knobs), for a listing that says where a value comes from.
func (t ThreadSettings) KnobSet(key string) bool {
	m := ThreadMask{}
	if t.Mask != nil {
		m = *t.Mask
	}
	switch key {
	case KeyKeepTurns:
		return t.KeepTurns != nil
	case KeyCompactEveryTurns:
		return t.CompactEveryTurns != nil
	case KeyMaskKeepResults:
		return m.KeepToolResults != nil
	case KeyMaskExcludeTools:
		return m.ExcludeTools != nil
	case KeyMaskClearInputs:
		return m.ClearToolInputs != nil
	case KeyMaskClearThinking:
		return m.ClearThinking != nil
	}
	return false
}

// KnobValue is the value of the knob named by key in s, as a listing shows it.
func (s Settings) KnobValue(key string) string {
	switch key {
	case KeyKeepTurns:
		return strconv.Itoa(s.KeepTurns)
	case KeyCompactEveryTurns:
		return strconv.Itoa(s.CompactEveryTurns)
	case KeyMaskKeepResults:
		return strconv.Itoa(s.Mask.KeepToolResults)
	case KeyMaskExcludeTools:
		return "[" + strings.Join(s.Mask.ExcludeTools, ", ") + "]"
	case KeyMaskClearInputs:
		return strconv.FormatBool(s.Mask.ClearToolInputs)
	case KeyMaskClearThinking:
		return strconv.FormatBool(s.Mask.ClearThinking)
	}
	return ""
}

// KnobKeys are the keys of the turn and masking knobs, in the order they are shown.
func KnobKeys() []string { return slices.Clone(knobKeys) }
