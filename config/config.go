package config

import (
	"cmp"
	"time"

	"github.com/memcascade/memcascade/cascade"
)

// Provider types.
const (
	// TypeOpenAI is any OpenAI-compatible chat completions endpoint.
	TypeOpenAI = "openai"
	// TypeExtractive is the built-in offline summarizer.
	TypeExtractive = "extractive"
)

// Summary roles.
const (
	RoleSystem = "system"
	RoleUser   = "user"
)

const (
	// EnvVar names the environment variable that [Locate] consults.
	EnvVar = "MEMCTL_CONFIG"
	// DefaultSource is the Source of the built-in default configuration.
	DefaultSource = "built-in default"
)

// Config is the whole memctl configuration.
type Config struct {
	// Model is the agent's model; it picks the tokenizer of new threads.
	Model string `yaml:"model" json:"model"`
	// Encoding forces a built-in tokenizer (one of tokencount.Encodings:
	// o200k_base, cl100k_base, p50k_base, r50k_base) for models the tokenizer
	// library does not know; "" picks it from Model.
	Encoding string `yaml:"encoding" json:"encoding"`
	// EncodingFile is a vocabulary file that counts new threads instead of a
	// built-in encoding: a Hugging Face tokenizer.json of a byte-level BPE
	// model (Qwen, Llama 3, ...), recognized by its content, or a
	// tiktoken-format vocabulary (Llama 3's tokenizer.model is one); see
	// tokencount.NewFileCounter. It excludes Encoding.
	EncodingFile string `yaml:"encoding_file" json:"encoding_file"`
	// EncodingPattern is the split pattern of a tiktoken-format EncodingFile,
	// a regexp2 regular expression; "" is the cl100k_base pattern, which
	// Llama 3 also uses. A tokenizer.json has its own: it must be "".
	EncodingPattern string `yaml:"encoding_pattern" json:"encoding_pattern"`

	Compaction Compaction `yaml:"compaction" json:"compaction"`
	// RedactPatterns are extra regular expressions (Go RE2 syntax) whose
	// matches never leave the machine.
	RedactPatterns []string `yaml:"redact_patterns" json:"redact_patterns"`
	// Cascade is the ordered list of summarization providers: the cascade named "default".
	Cascade []Provider `yaml:"cascade" json:"cascade"`
	// Cascades are other lists of providers, by name, that compaction.cascade and
	// compaction.part_cascade (and a thread's settings) may name instead of the default.
	Cascades map[string][]Provider `yaml:"cascades" json:"cascades"`
	// Serve configures memctl serve; its flags win over it.
	Serve Serve `yaml:"serve" json:"serve"`
	// Offline, when false, keeps the cascade as listed. Otherwise (unset or true) a cascade
	// without an extractive provider gets one, named "offline", as its last rung (see
	// [Config.NewCascade]), so compaction still works when every server is down.
	Offline *bool `yaml:"offline" json:"offline,omitempty"`
	// Hooks are commands run before and after each compaction (see Hooks).
	Hooks Hooks `yaml:"hooks" json:"hooks"`

	Source string `yaml:"-" json:"source"` // the file it came from, or "built-in default"
}

// Compaction holds the budgets and limits of one compaction.
type Compaction struct {
	// TokenLimit is the window compactions fit the active context in: a number of tokens, or
	// WindowAuto (the default): memctl serve reads the window of the model it fronts from the
	// upstream, and everything else uses compact.DefaultTokenLimit (see [Compaction.Limit]).
	TokenLimit Window `yaml:"token_limit" json:"token_limit"`
	// ReserveTokens are held back for tool definitions and the reply; every
	// budget is TokenLimit - ReserveTokens.
	ReserveTokens int `yaml:"reserve_tokens" json:"reserve_tokens"`
	// TargetRatio bounds the system prompt plus the kept recent messages.
	TargetRatio float64 `yaml:"target_ratio" json:"target_ratio"`
	// TriggerRatio: compact when the active context passes this share.
	TriggerRatio     float64 `yaml:"trigger_ratio" json:"trigger_ratio"`
	SummaryMaxTokens int     `yaml:"summary_max_tokens" json:"summary_max_tokens"`
	// SummaryRole is the role of the summary message: "system" or "user".
	SummaryRole string `yaml:"summary_role" json:"summary_role"`
	MaxPasses   int    `yaml:"max_passes" json:"max_passes"`
	// AttemptTimeout bounds one provider's whole turn, retries and waits included.
	AttemptTimeout Duration `yaml:"attempt_timeout" json:"attempt_timeout"`
	// TotalTimeout bounds the whole compaction.
	TotalTimeout Duration `yaml:"total_timeout" json:"total_timeout"`
	// Strategy is summarize, mask, hybrid or window (see compact.Settings.Strategy).
	Strategy string `yaml:"strategy" json:"strategy"`
	// EmergencyRatio: at or above this share of the limit a compaction is an emergency.
	EmergencyRatio float64 `yaml:"emergency_ratio" json:"emergency_ratio"`
	// OnFailure is keep or fit (see compact.Settings.OnFailure).
	OnFailure string `yaml:"on_failure" json:"on_failure"`
	// PromptFile is a file of summarization instructions of one's own (see
	// compact.ValidatePrompt), relative to the config file's directory; "" for the built-in ones.
	PromptFile string `yaml:"prompt_file" json:"prompt_file"`
	// Prompt is the text of PromptFile, read when the config is loaded.
	Prompt string `yaml:"-" json:"-"`
	// MaxFailures failed compactions of a thread in a row hold it (see compact.Held).
	MaxFailures int `yaml:"max_failures" json:"max_failures"`
	// QueueSize is the most summaries the queue strategy keeps as blocks of their own (see
	// compact.Settings.QueueSize).
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// KeepTurns keeps the newest KeepTurns user turns whole while they fit (see
	// compact.Settings.KeepTurns); 0: off.
	KeepTurns int `yaml:"keep_turns" json:"keep_turns"`
	// CompactEveryTurns makes a compaction due every CompactEveryTurns user turns (see
	// compact.Settings.CompactEveryTurns); 0: off.
	CompactEveryTurns int `yaml:"compact_every_turns" json:"compact_every_turns"`
	// Mask tunes the mask and hybrid strategies (see compact.MaskSettings).
	Mask Mask `yaml:"mask" json:"mask"`
	// Cascade names the cascade that writes the summaries: "default" (the top-level cascade)
	// or a name of cascades.
	Cascade string `yaml:"cascade" json:"cascade"`
	// PartCascade names a cascade that summarizes the middle in parts before Cascade writes the
	// final summary from them: "none" (the default) or a cascade's name.
	PartCascade string `yaml:"part_cascade" json:"part_cascade"`
	// MaxCost is the most, in dollars, a provider with a price_per_mtok may be estimated to
	// cost for one summary; one estimated over it is skipped (see compact.Settings.MaxCost).
	// 0: no limit.
	MaxCost float64 `yaml:"max_cost" json:"max_cost"`
}

// Mask is the compaction.mask section (see compact.MaskSettings).
type Mask struct {
	KeepToolResults int      `yaml:"keep_tool_results" json:"keep_tool_results"`
	ExcludeTools    []string `yaml:"exclude_tools" json:"exclude_tools"`
	ClearToolInputs bool     `yaml:"clear_tool_inputs" json:"clear_tool_inputs"`
	ClearThinking   bool     `yaml:"clear_thinking" json:"clear_thinking"`
}

// Serve configures memctl serve, the OpenAI-compatible proxy.
type Serve struct {
	// Listen is the address to listen on, HOST:PORT (default 127.0.0.1:8787, loopback).
	Listen string `yaml:"listen" json:"listen"`
	// Upstream is the base URL of the agent's model, ending in /v1.
	Upstream string `yaml:"upstream" json:"upstream"`
	// UpstreamKeyEnv names the environment variable that holds the upstream's key; never the
	// key itself.
	UpstreamKeyEnv string `yaml:"upstream_key_env" json:"upstream_key_env"`
	// TokenEnv names the environment variable that holds the bearer token clients must send;
	// required for a non-loopback Listen.
	TokenEnv string `yaml:"token_env" json:"token_env"`
	// Recall lets the model of a thread with compacted history search it: the proxy adds a
	// memory_search tool and answers the model's calls of it itself (serve.Server.Recall).
	Recall bool `yaml:"recall" json:"recall"`
	// PricePerMTok is what the upstream charges (nil: no price): each reply stored adds its
	// cost to its thread's.
	PricePerMTok *Price `yaml:"price_per_mtok,omitempty" json:"price_per_mtok,omitempty"`
	// Notice is the notes the proxy adds, for the model, at the end of a request: that the
	// context will soon be compacted, and what a compaction summarized (serve.Server.Notice).
	Notice Notice `yaml:"notice" json:"notice"`
}

// Notice configures the notes memctl serve adds for the agent's model (serve.Notice): off by
// default.
type Notice struct {
	// Enabled turns the notes on.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// AtRatio is where the note that the context will soon be compacted is given: when the
	// active context passes this share of the compaction trigger (budget x trigger_ratio),
	// in (0, 1]; DefaultNoticeRatio.
	AtRatio float64 `yaml:"at_ratio" json:"at_ratio"`
}

// DefaultNoticeRatio is serve.notice.at_ratio's default: the note comes at 80% of the
// compaction trigger.
const DefaultNoticeRatio = 0.8

// DefaultListen is the default address of memctl serve.
const DefaultListen = "127.0.0.1:8787"

// Provider is one entry of the cascade.
type Provider struct {
	// Name is required and unique; it is the key of the provider's cooldown state.
	Name string `yaml:"name" json:"name"`
	// Type is TypeOpenAI (the default) or TypeExtractive.
	Type    string `yaml:"type" json:"type"`
	BaseURL string `yaml:"base_url" json:"base_url"`
	Model   string `yaml:"model" json:"model"`
	// APIKeyEnv names the environment variable that holds the key; never the key itself.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env"`
	// ContextWindow is the number of tokens the provider accepts; larger inputs are chunked.
	// WindowAuto reads it from the provider's server.
	ContextWindow   Window  `yaml:"context_window" json:"context_window"`
	MaxOutputTokens int     `yaml:"max_output_tokens" json:"max_output_tokens"`
	Temperature     float64 `yaml:"temperature" json:"temperature"`
	// Timeout bounds one request.
	Timeout     Duration `yaml:"timeout" json:"timeout"`
	MaxAttempts int      `yaml:"max_attempts" json:"max_attempts"`
	// MaxWait is the longest pause before a retry: a Retry-After or backoff
	// beyond it puts the provider on cooldown at once and the cascade moves on.
	MaxWait Duration `yaml:"max_wait" json:"max_wait"`
	// Concurrency is how many requests of one compaction the provider may serve at once.
	Concurrency int `yaml:"concurrency" json:"concurrency"`
	// Cooldown is the first cooldown; it doubles with each consecutive failure
	// up to MaxCooldown.
	Cooldown    Duration `yaml:"cooldown" json:"cooldown"`
	MaxCooldown Duration `yaml:"max_cooldown" json:"max_cooldown"`
	// PricePerMTok is what the provider charges (nil: no price); not for type extractive,
	// which is free.
	PricePerMTok *Price `yaml:"price_per_mtok,omitempty" json:"price_per_mtok,omitempty"`
}

// Per-provider defaults.
const (
	defaultBaseURL         = "http://127.0.0.1:11434/v1"
	defaultExtractiveModel = "extractive"
	defaultContextWindow   = 8192
	defaultMaxOutputTokens = 1024
	defaultTimeout         = Duration(60 * time.Second)
	defaultMaxAttempts     = 2
	defaultMaxWait         = Duration(cascade.DefaultMaxWait)
	defaultConcurrency     = 1
	defaultCooldown        = Duration(cascade.DefaultCooldown)
	defaultMaxCooldown     = Duration(cascade.DefaultMaxCooldown)
)

// defaultCompaction is the compaction section's defaults: those of package memory, so a
// library user without a config file gets the same ones.
func defaultCompaction() Compaction {
	cp := Compaction{TokenLimit: WindowAuto}
	cp.fill()
	return cp
}

// defaultAttemptTimeout is the default of compaction.attempt_timeout, the one compaction key
// compact.Settings does not hold (it bounds a provider's turn in the cascade).
const defaultAttemptTimeout = Duration(5 * time.Minute)

// fill sets the zero fields of the compaction section to their defaults: memory's
// (compact.Settings.WithDefaults), and attempt_timeout's.
func (cp *Compaction) fill() {
	if cp.TokenLimit == 0 {
		cp.TokenLimit = WindowAuto
	}
	cp.setSettings(cp.settings().WithDefaults())
	if cp.AttemptTimeout == 0 {
		cp.AttemptTimeout = defaultAttemptTimeout
	}
}

func defaultCascade() []Provider {
	return []Provider{Provider{Name: "offline", Type: TypeExtractive}.WithDefaults()}
}

// Default returns the built-in configuration memctl uses when there is no
// config file: the documented defaults and a cascade of one extractive
// provider named "offline".
func Default() Config {
	return Config{
		Model:          "gpt-4o",
		Encoding:       "",
		Compaction:     defaultCompaction(),
		RedactPatterns: []string{},
		Cascade:        defaultCascade(),
		Cascades:       map[string][]Provider{},
		Serve:          Serve{Listen: DefaultListen, Notice: Notice{AtRatio: DefaultNoticeRatio}},
		Source:         DefaultSource,
	}
}

// WithDefaults returns a copy of c with every zero-valued field whose zero
// value is never valid replaced by its default: Model, the compaction fields
// other than ReserveTokens, and every provider's fields (see
// [Provider.WithDefaults]). A nil Cascade becomes the default cascade; an
// empty non-nil one stays empty (and fails Validate, like `cascade: []`). A
// nil RedactPatterns becomes empty. Zero values that are valid (ReserveTokens,
// Encoding, Temperature, APIKeyEnv) are kept. Source is kept.
//
// It is meant for configs built in Go; [Parse] already fills defaults.
func (c Config) WithDefaults() Config {
	if c.Model == "" {
		c.Model = Default().Model
	}
	c.Compaction.fill()
	if c.Serve.Listen == "" {
		c.Serve.Listen = DefaultListen
	}
	if c.Serve.Notice.AtRatio == 0 {
		c.Serve.Notice.AtRatio = DefaultNoticeRatio
	}
	c.Hooks = c.Hooks.withDefaults()
	if c.RedactPatterns == nil {
		c.RedactPatterns = []string{}
	} else {
		c.RedactPatterns = append([]string{}, c.RedactPatterns...)
	}
	if c.Cascade == nil {
		c.Cascade = defaultCascade()
	} else {
		c.Cascade = providersWithDefaults(c.Cascade)
	}
	named := make(map[string][]Provider, len(c.Cascades))
	for name, ps := range c.Cascades {
		named[name] = providersWithDefaults(ps)
	}
	c.Cascades = named
	return c
}

// providersWithDefaults is a copy of ps, each with its defaults (see Provider.WithDefaults).
func providersWithDefaults(ps []Provider) []Provider {
	if ps == nil {
		return nil
	}
	out := make([]Provider, len(ps))
	for i, p := range ps {
		out[i] = p.WithDefaults()
	}
	return out
}

// WithDefaults returns a copy of p with its zero-valued fields set to the
// per-provider defaults: Type "openai"; for openai providers BaseURL
// http://127.0.0.1:11434/v1 (Model has no default: it names what the server
// serves, and Validate requires it); for extractive providers
// Model "extractive" (BaseURL, APIKeyEnv and Temperature stay as they are);
// ContextWindow 8192, MaxOutputTokens 1024, Timeout 60s, MaxAttempts 2,
// MaxWait 10s, Concurrency 1, Cooldown 30s, MaxCooldown 1h. Name is never filled in.
func (p Provider) WithDefaults() Provider {
	p.Type = cmp.Or(p.Type, TypeOpenAI)
	if p.Type == TypeExtractive {
		if p.Model == "" {
			p.Model = defaultExtractiveModel
		}
	} else {
		if p.BaseURL == "" {
			p.BaseURL = defaultBaseURL
		}
	}
	p.ContextWindow = cmp.Or(p.ContextWindow, defaultContextWindow)
	p.MaxOutputTokens = cmp.Or(p.MaxOutputTokens, defaultMaxOutputTokens)
	p.Timeout = cmp.Or(p.Timeout, defaultTimeout)
	p.MaxAttempts = cmp.Or(p.MaxAttempts, defaultMaxAttempts)
	p.MaxWait = cmp.Or(p.MaxWait, defaultMaxWait)
	p.Concurrency = cmp.Or(p.Concurrency, defaultConcurrency)
	p.Cooldown = cmp.Or(p.Cooldown, defaultCooldown)
	p.MaxCooldown = cmp.Or(p.MaxCooldown, defaultMaxCooldown)
	return p
}
