package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/redact"
	"github.com/memcascade/memcascade/tokencount"
)

// Settings returns the compaction settings of the config, defaults filled in.
func (c Config) Settings() compact.Settings { return c.WithDefaults().Compaction.settings() }

// settings maps the compaction section onto memory's settings, values as they are.
func (cp Compaction) settings() compact.Settings {
	return compact.Settings{
		TokenLimit:        cp.Limit(),
		ReserveTokens:     cp.ReserveTokens,
		TargetRatio:       cp.TargetRatio,
		TriggerRatio:      cp.TriggerRatio,
		SummaryMaxTokens:  cp.SummaryMaxTokens,
		SummaryRole:       cp.SummaryRole,
		MaxPasses:         cp.MaxPasses,
		TotalTimeout:      time.Duration(cp.TotalTimeout),
		Strategy:          cp.Strategy,
		EmergencyRatio:    cp.EmergencyRatio,
		OnFailure:         cp.OnFailure,
		Prompt:            cp.Prompt,
		KeepTurns:         cp.KeepTurns,
		CompactEveryTurns: cp.CompactEveryTurns,
		Mask: compact.MaskSettings{KeepToolResults: cp.Mask.KeepToolResults, ExcludeTools: slices.Clone(cp.Mask.ExcludeTools),
			ClearToolInputs: cp.Mask.ClearToolInputs, ClearThinking: cp.Mask.ClearThinking},
		MaxFailures: cp.MaxFailures,
		Cascade:     cp.Cascade,
		PartCascade: cp.PartCascade,
		MaxCost:     cp.MaxCost,
		QueueSize:   cp.QueueSize,
	}
}

// Limit is token_limit as a number: compact.DefaultTokenLimit for auto, which only memctl
// serve resolves (to its upstream's window).
func (cp Compaction) Limit() int {
	if cp.TokenLimit == WindowAuto {
		return compact.DefaultTokenLimit
	}
	return int(cp.TokenLimit)
}

// setSettings sets the compaction section from memory's settings (the inverse of settings).
func (cp *Compaction) setSettings(s compact.Settings) {
	if cp.TokenLimit != WindowAuto {
		cp.TokenLimit = Window(s.TokenLimit)
	}
	cp.ReserveTokens = s.ReserveTokens
	cp.TargetRatio, cp.TriggerRatio = s.TargetRatio, s.TriggerRatio
	cp.SummaryMaxTokens, cp.SummaryRole = s.SummaryMaxTokens, s.SummaryRole
	cp.MaxPasses, cp.TotalTimeout = s.MaxPasses, Duration(s.TotalTimeout)
	cp.Strategy, cp.EmergencyRatio, cp.OnFailure = s.Strategy, s.EmergencyRatio, s.OnFailure
	cp.Prompt = s.Prompt
	cp.KeepTurns, cp.CompactEveryTurns = s.KeepTurns, s.CompactEveryTurns
	cp.Mask = Mask{KeepToolResults: s.Mask.KeepToolResults, ExcludeTools: slices.Clone(s.Mask.ExcludeTools),
		ClearToolInputs: s.Mask.ClearToolInputs, ClearThinking: s.Mask.ClearThinking}
	if len(cp.Mask.ExcludeTools) == 0 {
		cp.Mask.ExcludeTools = nil // rendered [], parsed back as none
	}
	cp.Cascade, cp.PartCascade = s.Cascade, s.PartCascade
	cp.MaxCost = s.MaxCost
	cp.MaxFailures, cp.QueueSize = s.MaxFailures, s.QueueSize
}

// Counter returns the token counter of encoding_file, loaded from the file, or nil when the
// config names no file (new threads are then counted by a built-in encoding: encoding, or the
// one of the model). A relative path is read from the directory of the config file. Give the
// counter to the store (memory.Options.Counter).
func (c Config) Counter() (*tokencount.BPECounter, error) {
	if c.EncodingFile == "" {
		return nil, nil
	}
	path := c.EncodingFile
	if !filepath.IsAbs(path) && c.Source != "" && c.Source != DefaultSource {
		path = filepath.Join(filepath.Dir(c.Source), path)
	}
	counter, err := tokencount.NewFileCounter(path, c.EncodingPattern)
	if err != nil {
		return nil, &Error{File: c.Source, Key: "encoding_file", Msg: err.Error(), Err: err}
	}
	return counter, nil
}

// Redactor returns the secret redactor: the built-in patterns plus redact_patterns.
func (c Config) Redactor() (*redact.Redactor, error) {
	r, err := redact.New(c.RedactPatterns)
	if err != nil {
		return nil, &Error{File: c.Source, Key: "redact_patterns", Msg: err.Error(), Err: err}
	}
	return r, nil
}

// OfflineName is the name of the extractive rung [Config.NewCascade] adds.
const OfflineName = "offline"

// withOfflineRung returns the list of providers ps (the cascade, or one of cascades) with the
// built-in extractive provider as its last rung when it has none and the config does not say
// offline: false.
func (c Config) withOfflineRung(ps []Provider) []Provider {
	if (c.Offline != nil && !*c.Offline) || len(ps) == 0 ||
		slices.ContainsFunc(ps, func(p Provider) bool { return p.Type == TypeExtractive }) {
		return ps
	}
	name := OfflineName
	for i := 2; slices.ContainsFunc(ps, func(p Provider) bool { return p.Name == name }); i++ {
		name = fmt.Sprintf("%s-%d", OfflineName, i)
	}
	return append(slices.Clone(ps), Provider{Name: name, Type: TypeExtractive}.WithDefaults())
}

// NewCompactor builds the compactor of the config over store and the cascade it summarizes
// through, on h, the database store was built on (memory.New), which holds the cascade's
// cooldowns and attempt log. The cascade is the config's (see NewCascade), with opt and the
// store's clock (Store.Now: a compaction and its attempts read one clock). The compactor has
// the config's compaction settings, comp, and the cascade's pace (Cascade.TimeFor: the time an
// emergency compaction gives a slow provider). One redactor, built once from the built-in
// patterns and redact_patterns, is both the compactor's (everything sent to a provider, every
// summary, fact and error stored) and the cascade's (every attempt's error): it replaces
// comp.Redact and opt.Redact.
func (c Config) NewCompactor(h *db.Handle, store *memory.Store, opt cascade.Options, comp compact.Config) (*compact.Compactor, *cascade.Cascade, error) {
	return c.NewCompactorWith(h, store, opt, comp, nil)
}

// NewCompactorWith is NewCompactor with the rungs first put before the config's cascade:
// memctl serve's upstream rung (the model it fronts) when the config names no cascade of its
// own (see NamesCascade).
func (c Config) NewCompactorWith(h *db.Handle, store *memory.Store, opt cascade.Options, comp compact.Config, first []cascade.Entry) (*compact.Compactor, *cascade.Cascade, error) {
	red, err := c.redact()
	if err != nil {
		return nil, nil, err
	}
	opt.Now = store.Now
	casc, err := c.newCascade(h, opt, red, first)
	if err != nil {
		return nil, nil, err
	}
	named, err := c.newCascades(h, opt, red)
	if err != nil {
		return nil, nil, err
	}
	comp.Summarizers = make(map[string]compact.Summarizer, len(named))
	for name, nc := range named {
		comp.Summarizers[name] = nc
	}
	comp.Redact, comp.Pace = red, casc.TimeFor
	c.setHooks(&comp, red)
	return compact.NewWith(store, casc, c.Settings(), comp), casc, nil
}

// NewCascade builds the provider cascade of the config on the database h, which holds the
// cooldowns and the attempt log. opt are the program's settings of the cascade (its clock,
// Count, Logger, Observe...); the config's own win over them: AttemptTimeout
// (compaction.attempt_timeout) and Redact (the built-in patterns plus redact_patterns). A
// cascade without an extractive provider ends with one named "offline" unless the config says
// offline: false. opt.Count, when not nil, is the token counter the extractive provider sizes
// its summaries with, and the one that counts the usage of a server that sends none. API keys
// are read from the environment at request time.
func (c Config) NewCascade(h *db.Handle, opt cascade.Options) (*cascade.Cascade, error) {
	red, err := c.redact()
	if err != nil {
		return nil, err
	}
	return c.newCascade(h, opt, red, nil)
}

// NamesCascade reports whether the config names a cascade of its own: one other than the
// built-in default, the offline rung alone (a config that writes that one out names none).
// memctl serve summarizes with the model it fronts, then offline, when it names none.
func (c Config) NamesCascade() bool {
	return !slices.Equal(c.WithDefaults().Cascade, defaultCascade())
}

// NewCascades builds the cascades of the cascades section, by name, as NewCascade builds the
// default one (each ends with the offline rung unless the config says offline: false). They
// share the database h: a provider's cooldown is kept by its name, so a provider named alike in
// two cascades cools down in both.
func (c Config) NewCascades(h *db.Handle, opt cascade.Options) (map[string]*cascade.Cascade, error) {
	red, err := c.redact()
	if err != nil {
		return nil, err
	}
	return c.newCascades(h, opt, red)
}

// newCascades is NewCascades with the redaction red.
func (c Config) newCascades(h *db.Handle, opt cascade.Options, red func(string) string) (map[string]*cascade.Cascade, error) {
	out := make(map[string]*cascade.Cascade, len(c.Cascades))
	for name, ps := range c.Cascades {
		casc, err := c.cascadeOf(h, opt, red, nil, ps)
		if err != nil {
			return nil, fmt.Errorf("cascades.%s: %w", name, err)
		}
		out[name] = casc
	}
	return out, nil
}

// CascadeNames are the names of the cascades section, sorted.
func (c Config) CascadeNames() []string {
	names := make([]string, 0, len(c.Cascades))
	for name := range c.Cascades {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// redact is the redaction of Redactor as a function.
func (c Config) redact() (func(string) string, error) {
	r, err := c.WithDefaults().Redactor()
	if err != nil {
		return nil, err
	}
	return func(s string) string { out, _ := r.Redact(s); return out }, nil
}

// newCascade is NewCascade with the redaction red, and the rungs first before the config's.
func (c Config) newCascade(h *db.Handle, opt cascade.Options, red func(string) string, first []cascade.Entry) (*cascade.Cascade, error) {
	c = c.WithDefaults()
	return c.cascadeOf(h, opt, red, first, c.Cascade)
}

// cascadeOf builds the cascade of the rungs first, then the providers ps with the config's
// offline rung, attempt_timeout and redaction red.
func (c Config) cascadeOf(h *db.Handle, opt cascade.Options, red func(string) string, first []cascade.Entry, ps []Provider) (*cascade.Cascade, error) {
	c = c.WithDefaults()
	entries := make([]cascade.Entry, 0, len(first)+len(ps)+1)
	entries = append(entries, first...)
	for _, p := range c.withOfflineRung(ps) {
		p = p.WithDefaults()
		e := cascade.Entry{
			Name: p.Name, Type: p.Type, Model: p.Model, BaseURL: p.BaseURL,
			ContextWindow: int(p.ContextWindow), MaxOutputTokens: p.MaxOutputTokens, MaxAttempts: p.MaxAttempts,
			MaxWait: time.Duration(p.MaxWait), Cooldown: time.Duration(p.Cooldown), MaxCooldown: time.Duration(p.MaxCooldown),
			Concurrency: p.Concurrency, Price: p.PricePerMTok.LLM(),
		}
		if p.ContextWindow == WindowAuto {
			// Read from the server before each turn (cached); cascade.DefaultAutoWindow when
			// it does not say.
			e.AutoWindow, e.ContextWindow = true, 0
		}
		switch p.Type {
		case TypeExtractive:
			e.BaseURL, e.ContextWindow = "", 0 // no window: the extractive summarizer reads any size
			e.Offline = true                   // answers at once: the cascade keeps time for it
			e.Provider = extractive.Summarizer{Count: opt.Count}
		case TypeOpenAI:
			e.Provider = cascade.NewOpenAI(cascade.OpenAIConfig{
				Name: p.Name, BaseURL: p.BaseURL, Model: p.Model, APIKeyEnv: p.APIKeyEnv, Getenv: os.Getenv,
				Timeout: time.Duration(p.Timeout), MaxOutputTokens: p.MaxOutputTokens, Temperature: p.Temperature,
			})
		default:
			return nil, fmt.Errorf("cascade: provider %q: unknown type %q", p.Name, p.Type)
		}
		entries = append(entries, e)
	}
	opt.AttemptTimeout = time.Duration(c.Compaction.AttemptTimeout)
	opt.Redact = red
	return cascade.NewWith(h, opt, entries...), nil
}
