package compact

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// Settings tune compaction. The zero value of a field means its default (the Default* constants below).
type Settings struct {
	// TokenLimit is the model's context window in tokens.
	TokenLimit int
	// ReserveTokens are held back for tool definitions and the reply. Every budget is in tokens
	// of L = TokenLimit - ReserveTokens.
	ReserveTokens int
	// TargetRatio: the pinned messages plus the kept recent ones fit in L * TargetRatio.
	TargetRatio float64
	// TriggerRatio: compaction is due when the active context passes L * TriggerRatio.
	TriggerRatio float64
	// SummaryMaxTokens bounds the summary.
	SummaryMaxTokens int
	// SummaryRole is the role of the summary message: system or user.
	SummaryRole string
	// MaxPasses bounds the passes of one compaction (each halves the kept budget).
	MaxPasses int
	// TotalTimeout bounds a whole compaction (0: none).
	TotalTimeout time.Duration
	// MaxResultBytes trims each long message text or tool result in the summarizer's input,
	// keeping its head and tail around a visible marker.
	MaxResultBytes int
	// Strategy is how a compaction shrinks the context: summarize (the default), mask, hybrid,
	// window, or a strategy the program registered (see Strategy, Register).
	Strategy string
	// EmergencyRatio: a context at or above L * EmergencyRatio is compacted with reason
	// emergency, by the cheapest path that gets under the target (see Compactor.Compact).
	EmergencyRatio float64
	// OnFailure is what happens when summarizing fails or cannot get under L: keep (the
	// default: the active context stays as it was when summarizing failed; when what keeps it
	// over L is what no summary shrinks, the newest unit, its largest tool results are cut in
	// the view, then the newest user message) or fit (the view is masked, then its oldest units
	// left out, never the newest user message, then the largest tool results cut, until it
	// fits). Either way history is untouched and revert restores the view.
	OnFailure string
	// Prompt replaces the built-in summarization instructions (see ValidatePrompt); "" keeps them.
	Prompt string
	// KeepTurns keeps at least the newest KeepTurns user turns whole in the kept part, while
	// they fit the kept budget (0: none; see turns.go).
	KeepTurns int
	// CompactEveryTurns makes a compaction due every CompactEveryTurns user turns since the
	// latest one, even under the trigger (0: never; see turns.go).
	CompactEveryTurns int
	// Mask tunes what the mask and hybrid strategies mask (see MaskSettings).
	Mask MaskSettings
	// MaxFailures failed compactions of a thread in a row hold it (see Compactor.Held).
	MaxFailures int
	// Cascade names the summarizer that writes the summary: DefaultCascade (the default: the
	// compactor's Summarizer) or a name of Config.Summarizers (see cascades.go).
	Cascade string
	// PartCascade names the summarizer that summarizes the middle in parts, each on its own,
	// before Cascade writes the final summary from those part summaries: NoCascade (the
	// default: Cascade reads the whole middle), DefaultCascade or a name of Config.Summarizers.
	PartCascade string
	// MaxCost is the most, in dollars, a provider's requests for one summary are estimated to
	// cost: a provider with a price whose estimate is over it is skipped (outcome
	// skipped_cost; see cost.go). 0: no limit.
	MaxCost float64
	// QueueSize is the most summaries the queue strategy keeps in the active context, each a
	// block of its own; when a compaction finds that many, the two oldest fold into one first.
	QueueSize int
}

// Values of Settings.OnFailure.
const (
	OnFailureKeep = "keep"
	OnFailureFit  = "fit"
)

// Defaults of Settings, the same as the config file's.
const (
	DefaultTokenLimit       = 128000
	DefaultTargetRatio      = 0.5
	DefaultTriggerRatio     = 0.8
	DefaultSummaryMaxTokens = 2048
	DefaultSummaryRole      = chat.RoleSystem
	DefaultMaxPasses        = 3
	DefaultTotalTimeout     = 15 * time.Minute
	DefaultMaxResultBytes   = 4000
	DefaultStrategy         = StrategySummarize
	DefaultEmergencyRatio   = 0.95
	DefaultOnFailure        = OnFailureKeep
	DefaultMaxFailures      = 3
	DefaultQueueSize        = 3
)

// KeyQueueSize is queue_size's key; MaxQueueSize its largest value.
const (
	KeyQueueSize = "queue_size"
	MaxQueueSize = 64
)

// WithDefaults fills the zero fields with the Default* constants: the one place the defaults
// are filled (the config file and the thread settings come here too).
func (s Settings) WithDefaults() Settings {
	s.TokenLimit = cmp.Or(s.TokenLimit, DefaultTokenLimit)
	s.TargetRatio = cmp.Or(s.TargetRatio, DefaultTargetRatio)
	s.TriggerRatio = cmp.Or(s.TriggerRatio, DefaultTriggerRatio)
	s.SummaryMaxTokens = cmp.Or(s.SummaryMaxTokens, DefaultSummaryMaxTokens)
	s.SummaryRole = cmp.Or(s.SummaryRole, DefaultSummaryRole)
	s.MaxPasses = cmp.Or(s.MaxPasses, DefaultMaxPasses)
	s.TotalTimeout = cmp.Or(s.TotalTimeout, DefaultTotalTimeout)
	s.MaxResultBytes = cmp.Or(s.MaxResultBytes, DefaultMaxResultBytes)
	s.Strategy = cmp.Or(s.Strategy, DefaultStrategy)
	s.EmergencyRatio = cmp.Or(s.EmergencyRatio, DefaultEmergencyRatio)
	s.OnFailure = cmp.Or(s.OnFailure, DefaultOnFailure)
	s.MaxFailures = cmp.Or(s.MaxFailures, DefaultMaxFailures)
	s.Cascade = cmp.Or(s.Cascade, DefaultCascade)
	s.PartCascade = cmp.Or(s.PartCascade, NoCascade)
	s.QueueSize = cmp.Or(s.QueueSize, DefaultQueueSize)
	return s
}

// SettingError is an impossible setting, named by its key (token_limit, target_ratio, ...).
// Msg is the whole message; a rule's own errors also say their parts, so that the config file
// can word the same rule with its key names and lines: Value is the value as written in the
// message, Rule what it breaks, and a rule between two settings names the Other one, its value
// and the rule seen from its side (token_limit "must be above" reserve_tokens, reserve_tokens
// "must be below" token_limit).
type SettingError struct {
	Key string
	Msg string // the whole message, the key and the value in it

	Value, Rule                  string
	Other, OtherValue, OtherRule string
}

func (e *SettingError) Error() string { return e.Msg }

// Code is memory.CodeInvalid: memory.ErrorCode finds it for a SettingError.
func (e *SettingError) Code() memory.Code { return memory.CodeInvalid }

func settingErr(key, format string, args ...any) error {
	return &SettingError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// broken is the error of a rule of one setting: "key value rule".
func broken(key, value, rule string) *SettingError {
	return &SettingError{Key: key, Value: value, Rule: rule, Msg: key + " " + value + " " + rule}
}

// conflict is the error of a rule between two settings: "key value rule other otherValue".
func conflict(key, value, rule, other, otherValue, otherRule string) *SettingError {
	return &SettingError{Key: key, Value: value, Rule: rule, Other: other, OtherValue: otherValue, OtherRule: otherRule,
		Msg: key + " " + value + " " + rule + " " + other + " " + otherValue}
}

// Validate reports impossible settings; the error is a *SettingError naming the key at fault.
// These are the only rules of the settings: the config file, the thread settings and the flags
// of memctl are checked with them.
func (s Settings) Validate() error { return s.WithDefaults().check() }

// Resolve is Compactor.SettingsFor of a thread whose settings are at hand:
// Effective(base, thread, override), with override checked as given (an error "override: ...")
// and the merged settings checked (an error "settings: ..."); each error wraps the
// *SettingError naming the key at fault.
func Resolve(base Settings, thread, override ThreadSettings) (Settings, error) {
	if err := override.Validate(); err != nil {
		return Settings{}, fmt.Errorf("override: %w", err)
	}
	s := Effective(base, thread, override)
	if err := s.check(); err != nil {
		return Settings{}, fmt.Errorf("settings: %w", err)
	}
	return s, nil
}

// MaxTokenLimit bounds token_limit (2^30, hundreds of times any model's window, and an int on
// 32-bit targets too): budgets are
// computed in float64 and int, and a larger limit would overflow them.
const MaxTokenLimit = 1 << 30

// check is Validate of settings whose zero fields are values, not "the default".
func (s Settings) check() error {
	if ps := s.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// strategyList names the registered strategies in messages.
func strategyList() string {
	names := Strategies()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Problems lists every rule the settings break, in the order of the fields, taking the values as
// they are (a zero field is a zero, not "the default": fill them with Validate's defaults first
// if that is meant). A rule between two settings is checked only when each is valid alone.
// Settings.Validate reports the first; the config file reports them all with their lines.
func (s Settings) Problems() []*SettingError {
	var ps []*SettingError
	add := func(p *SettingError) bool { ps = append(ps, p); return false }
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	atLeast1 := func(key string, v int) bool {
		return v >= 1 || add(broken(key, strconv.Itoa(v), "must be at least 1"))
	}
	ratio := func(key string, v float64) bool {
		return (v > 0 && v <= 1) || add(broken(key, num(v), "is outside (0, 1]")) // false for NaN
	}

	limitOK := atLeast1(KeyTokenLimit, s.TokenLimit) &&
		(s.TokenLimit <= MaxTokenLimit || add(broken(KeyTokenLimit, strconv.Itoa(s.TokenLimit),
			fmt.Sprintf("is over the largest supported, %d", MaxTokenLimit))))
	reserveOK := s.ReserveTokens >= 0 || add(broken(KeyReserveTokens, strconv.Itoa(s.ReserveTokens), "must not be negative"))
	if limitOK && reserveOK && s.TokenLimit <= s.ReserveTokens {
		add(conflict(KeyTokenLimit, strconv.Itoa(s.TokenLimit), "must be above",
			KeyReserveTokens, strconv.Itoa(s.ReserveTokens), "must be below"))
	}
	targetOK := ratio(KeyTargetRatio, s.TargetRatio)
	triggerOK := ratio(KeyTriggerRatio, s.TriggerRatio)
	if targetOK && triggerOK && s.TargetRatio >= s.TriggerRatio {
		add(conflict(KeyTargetRatio, num(s.TargetRatio), "must be below",
			KeyTriggerRatio, num(s.TriggerRatio), "must be above"))
	}
	atLeast1("summary_max_tokens", s.SummaryMaxTokens)
	if s.SummaryRole != chat.RoleSystem && s.SummaryRole != chat.RoleUser {
		add(broken("summary_role", strconv.Quote(s.SummaryRole), "must be system or user"))
	}
	atLeast1("max_passes", s.MaxPasses)
	if _, ok := strategyNamed(s.Strategy); !ok {
		add(broken(KeyStrategy, strconv.Quote(s.Strategy), "is not known (want "+strategyList()+")"))
	}
	ratio("emergency_ratio", s.EmergencyRatio)
	if s.OnFailure != OnFailureKeep && s.OnFailure != OnFailureFit {
		add(broken("on_failure", strconv.Quote(s.OnFailure), "must be "+OnFailureKeep+" or "+OnFailureFit))
	}
	atLeast1(KeyMaxFailures, s.MaxFailures)
	if atLeast1(KeyQueueSize, s.QueueSize) && s.QueueSize > MaxQueueSize {
		add(broken(KeyQueueSize, strconv.Itoa(s.QueueSize), fmt.Sprintf("is over the largest supported, %d", MaxQueueSize)))
	}
	if s.Prompt != "" {
		if err := ValidatePrompt(s.Prompt); err != nil {
			ps = append(ps, &SettingError{Key: KeyPromptFile, Msg: fmt.Sprintf("prompt: %v", err)})
		}
	}
	ps = append(ps, s.cascadeProblems()...)
	ps = append(ps, s.costProblems()...)
	return append(ps, s.knobProblems()...)
}

// Budget is L, the tokens every budget is a share of: TokenLimit - ReserveTokens. s are
// filled settings (Compactor.SettingsFor, Resolve, Effective or WithDefaults): Budget
// fills no default.
func (s Settings) Budget() int { return s.TokenLimit - s.ReserveTokens }

// Fits reports whether a prompt fits the settings: its messages, tokens, within L (Budget),
// and with the tool definitions, tools more, within TokenLimit. It is the rule memctl serve
// fits each turn by; s are filled settings (Compactor.SettingsFor, Resolve or
// Effective).
func (s Settings) Fits(tokens, tools int) bool {
	return tokens <= s.Budget() && tokens+tools <= s.TokenLimit
}

// LimitOverride returns the override that fits a thread (its settings ts, over base) in limit
// tokens (at least 1): the limit, and, when the reserve in effect would leave no room in it,
// a reserve of a quarter of it. memctl serve fits each turn in the override it returns (its
// window under token_limit auto, a compact-and-retry's cap), and a pin is checked in it.
func LimitOverride(base Settings, ts ThreadSettings, limit int) ThreadSettings {
	limit = max(limit, 1)
	over := ThreadSettings{TokenLimit: &limit}
	if r := Effective(base, ts, over).ReserveTokens; r >= limit {
		r = limit / 4
		over.ReserveTokens = &r
	}
	return over
}

// Limits are the limit, reserve and ratios of s, as a compaction's row stores them.
func (s Settings) Limits() memory.Limits {
	return memory.Limits{TokenLimit: s.TokenLimit, ReserveTokens: s.ReserveTokens, TargetRatio: s.TargetRatio,
		TriggerRatio: s.TriggerRatio}
}

// UnderTrigger reports whether a context of tokens tokens is at or under the trigger of s, its
// budget times its trigger ratio: an automatic compaction of it would not be due.
func (s Settings) UnderTrigger(tokens int) bool {
	return tokens <= int(float64(s.Budget())*s.TriggerRatio)
}

// DeepSummaryTokens is the least a deep plan gives its summary: the header that names the
// range it covers and a few lines. A pin is refused when it would leave a summary less room
// (or less than summary_max_tokens, when that is smaller).
const DeepSummaryTokens = 128

// MinSummaryTokens is the least room a deep plan of s gives its summary: DeepSummaryTokens,
// or summary_max_tokens when that is less. The planner finds a deep plan with less room
// ineffective, and a pin that would leave less is refused: one rule, read by both.
func (s Settings) MinSummaryTokens() int { return min(DeepSummaryTokens, s.SummaryMaxTokens) }
