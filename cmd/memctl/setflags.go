package main

import (
	"math"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
)

// The flags of memctl set for the keys of the compaction section beside the limits, the
// strategy and the knobs (knobflags.go), by the key each sets.
var moreFlags = map[string]string{
	compact.KeySummaryMaxTokens: "summary-max-tokens", compact.KeySummaryRole: "summary-role",
	compact.KeyMaxPasses: "max-passes", compact.KeyTotalTimeout: "total-timeout",
	compact.KeyEmergencyRatio: "emergency-ratio", compact.KeyOnFailure: "on-failure",
	compact.KeyPromptFile: "prompt-file", compact.KeyMaxFailures: "max-failures",
	compact.KeyCascade: "cascade", compact.KeyPartCascade: "part-cascade",
	compact.KeyQueueSize: "queue-size", compact.KeyMaxCost: "max-cost",
}

func init() {
	for k, v := range moreFlags {
		settingFlags[k] = v
	}
}

// addMoreFlags defines on f the flags of those keys.
func addMoreFlags(f *pflag.FlagSet) {
	f.Int("summary-max-tokens", 0, "summary_max_tokens: the largest summary")
	f.String("summary-role", "", "summary_role: the summary message's role, system or user")
	f.Int("max-passes", 0, "max_passes: passes of one compaction")
	f.Duration("total-timeout", 0, "total_timeout: the whole compaction (e.g. 10m)")
	f.Float64("emergency-ratio", 0, "emergency_ratio: at or above L x ratio a compaction is an emergency")
	f.String("on-failure", "", "on_failure: keep or fit")
	f.String("prompt-file", "", "prompt_file: summarization instructions of one's own, read now and stored on the thread")
	f.Int("max-failures", 0, "max_failures: failed compactions in a row that hold the thread")
	f.String("cascade", "", "cascade: the cascade that writes the thread's summaries (default, or a name of the config's cascades)")
	f.String("part-cascade", "", "part_cascade: a cascade that reads a long middle in parts first (none: off)")
	f.Int("queue-size", 0, "queue_size: the most summaries the queue strategy keeps as blocks of their own")
	f.Float64("max-cost", 0, "max_cost: the most, in dollars, a summary may be estimated to cost with a priced provider (0: no limit)")
}

// moreFromFlags sets on ts the settings those flags of cmd give (none when cmd has no such
// flag), each checked as given (exit 2, naming the flag).
func moreFromFlags(cmd *cobra.Command, ts *compact.ThreadSettings) error {
	f := cmd.Flags()
	changed := func(name string) bool { return f.Lookup(name) != nil && f.Changed(name) }
	for _, c := range []struct {
		name string
		dst  **int
	}{{"summary-max-tokens", &ts.SummaryMaxTokens}, {"max-passes", &ts.MaxPasses}, {"max-failures", &ts.MaxFailures}, {"queue-size", &ts.QueueSize}} {
		if changed(c.name) {
			v, _ := f.GetInt(c.name)
			if err := positiveFlag(c.name, v); err != nil {
				return err
			}
			*c.dst = &v
		}
	}
	if changed("total-timeout") {
		d, _ := f.GetDuration("total-timeout")
		if d <= 0 {
			return usagef("--total-timeout %s: must be a positive duration (e.g. 10m)", d)
		}
		ts.TotalTimeout = config.Duration(d).String()
	}
	if changed("emergency-ratio") {
		v, _ := f.GetFloat64("emergency-ratio")
		if err := ratioFlag("emergency-ratio", v); err != nil {
			return err
		}
		ts.EmergencyRatio = &v
	}
	if changed("max-cost") {
		v, _ := f.GetFloat64("max-cost")
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return usagef("--max-cost %v: must be a dollar amount, zero or more (0: no limit)", v)
		}
		ts.MaxCost = &v
	}
	for _, s := range []struct {
		name, key string
		dst       *string
	}{{"summary-role", compact.KeySummaryRole, &ts.SummaryRole}, {"on-failure", compact.KeyOnFailure, &ts.OnFailure},
		{"cascade", compact.KeyCascade, &ts.Cascade}, {"part-cascade", compact.KeyPartCascade, &ts.PartCascade}} {
		if changed(s.name) {
			v, _ := f.GetString(s.name)
			if v == "" {
				return usagef("--%s: empty (use --unset %s to clear it)", s.name, s.key)
			}
			*s.dst = v
		}
	}
	if changed("prompt-file") {
		path, _ := f.GetString("prompt-file")
		if path == "" {
			return usagef("--prompt-file: empty (use --unset %s to clear it)", compact.KeyPromptFile)
		}
		text, err := compact.LoadPrompt(path)
		if err != nil {
			return usagef("--prompt-file %s: %v", path, err)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs // shown later from anywhere
		}
		ts.Prompt, ts.PromptFile = text, path
	}
	return nil
}

// unknownCascade refuses settings s (filled) that name a cascade cfg does not define (exit 2,
// naming the flag when one set it).
func unknownCascade(cmd *cobra.Command, prefix string, cfg config.Config, s compact.Settings) error {
	if err := compact.UnknownCascade(s, cfg.CascadeNames()); err != nil {
		return settingsError(cmd, prefix, err)
	}
	return nil
}

// effectiveMore are the effective values of those keys, for set --json; promptFile is the file
// the prompt in effect was read from ("" for the built-in one).
func effectiveMore(eff compact.Settings, promptFile string) map[string]any {
	return map[string]any{
		compact.KeySummaryMaxTokens: eff.SummaryMaxTokens, compact.KeySummaryRole: eff.SummaryRole,
		compact.KeyMaxPasses: eff.MaxPasses, compact.KeyTotalTimeout: config.Duration(eff.TotalTimeout).String(),
		compact.KeyEmergencyRatio: eff.EmergencyRatio, compact.KeyOnFailure: eff.OnFailure,
		compact.KeyPromptFile: promptFile, compact.KeyMaxFailures: eff.MaxFailures,
		compact.KeyCascade: eff.Cascade, compact.KeyPartCascade: eff.PartCascade,
		compact.KeyQueueSize: eff.QueueSize, compact.KeyMaxCost: eff.MaxCost,
	}
}

// promptFileOf is the file the prompt of a thread's compactions comes from: the thread's, else
// the config's prompt_file ("" for the built-in instructions).
func promptFileOf(stored compact.ThreadSettings, cfg config.Config) string {
	if stored.Prompt != "" {
		return stored.PromptFile
	}
	return cfg.Compaction.PromptFile
}
