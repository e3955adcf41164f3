package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

// settingFlags are the flags of the thread settings, by the key each sets.
var settingFlags = map[string]string{
	memory.KeyTokenLimit: "limit", memory.KeyTargetRatio: "ratio", memory.KeyTriggerRatio: "trigger",
	memory.KeyReserveTokens: "reserve", memory.KeyStrategy: "strategy", memory.KeyModel: "model",
}

// settingsError is an impossible combination of settings as a usage error (exit 2), naming the
// flag of the key at fault when that flag was given.
func settingsError(cmd *cobra.Command, prefix string, err error) error {
	var se *memory.SettingError
	if errors.As(err, &se) {
		// The flag of the key at fault, else a flag given whose key the message names (token_limit
		// 1000 must be above reserve_tokens 1000: --reserve).
		keys := append([]string{se.Key}, memory.ThreadSettingKeys...)
		for i, key := range keys {
			name, ok := settingFlags[key]
			if ok && cmd.Flags().Lookup(name) != nil && cmd.Flags().Changed(name) && (i == 0 || strings.Contains(se.Msg, key)) {
				return usagef("%s: --%s %s: %s", prefix, name, cmd.Flags().Lookup(name).Value, se.Msg)
			}
		}
		return usagef("%s: %s", prefix, se.Msg)
	}
	return err
}

// settingsFromFlags returns the settings the flags of cmd set (limit, ratio, trigger, and for
// set also reserve, strategy and model), each checked as given: a value given is a value,
// never "the default" (exit 2, naming the flag).
func settingsFromFlags(cmd *cobra.Command) (memory.ThreadSettings, error) {
	var ts memory.ThreadSettings
	f := cmd.Flags()
	if f.Changed("limit") {
		v, _ := f.GetInt("limit")
		if err := positiveFlag("limit", v); err != nil {
			return ts, err
		}
		ts.TokenLimit = &v
	}
	for _, r := range []struct {
		name string
		dst  **float64
	}{{"ratio", &ts.TargetRatio}, {"trigger", &ts.TriggerRatio}} {
		if f.Changed(r.name) {
			v, _ := f.GetFloat64(r.name)
			if err := ratioFlag(r.name, v); err != nil {
				return ts, err
			}
			*r.dst = &v
		}
	}
	if f.Lookup("reserve") != nil && f.Changed("reserve") {
		v, _ := f.GetInt("reserve")
		if v < 0 {
			return ts, usagef("--reserve %d: must be zero or a positive whole number", v)
		}
		ts.ReserveTokens = &v
	}
	for _, s := range []struct {
		name string
		dst  *string
	}{{"strategy", &ts.Strategy}, {"model", &ts.Model}} {
		if f.Lookup(s.name) != nil && f.Changed(s.name) {
			v, _ := f.GetString(s.name)
			if v == "" {
				return ts, usagef("--%s: empty (use --unset %s to clear it)", s.name, s.name)
			}
			*s.dst = v
		}
	}
	if err := ts.Validate(); err != nil {
		return ts, settingsError(cmd, cmd.Name(), err)
	}
	return ts, nil
}

func (a *app) setCommand() *cobra.Command {
	var unset []string
	cmd := &cobra.Command{
		Use:   "set THREAD",
		Short: "Store compaction settings on a thread",
		Long: `Store compaction settings on THREAD; the settings not named keep their stored value, and
--unset KEY (token_limit, target_ratio, trigger_ratio, reserve_tokens, strategy, model) clears
one. Every compaction of the thread uses them: a flag of compact wins over them, and they win
over the config file, which wins over the built-in defaults. Without a flag, prints the
thread's settings.`,
		Example: `  memctl set support-42 --limit 8000 --reserve 1000
  memctl set support-42 --unset token_limit --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := threadArg(args[0]); err != nil {
				return err
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			given, err := settingsFromFlags(cmd)
			if err != nil {
				return err
			}
			for _, key := range unset {
				var probe memory.ThreadSettings
				if err := probe.Unset(key); err != nil {
					return usagef("--unset %s: %v", key, err)
				}
				if name := settingFlags[key]; cmd.Flags().Changed(name) {
					return usagef("--unset %s: --%s sets it in the same command", key, name)
				}
			}
			mode := forWriting
			if given.IsZero() && len(unset) == 0 {
				mode = forReading
			}
			s, err := a.open(ctx, mode)
			if err != nil {
				return err
			}
			t, err := s.Thread(ctx, args[0])
			if err != nil {
				return err
			}
			ts := t.Settings
			if mode == forWriting {
				for _, key := range unset {
					ts.Unset(key) // checked above
				}
				ts = ts.Over(given)
				prefix := "set " + t.ID
				if err := ts.Validate(); err != nil {
					return settingsError(cmd, prefix, err)
				}
				if err := memory.Effective(cfg.Settings(), ts, memory.ThreadSettings{}).Validate(); err != nil {
					return settingsError(cmd, prefix+" (with the config)", err)
				}
				if err := s.SetThreadSettings(ctx, t.ID, ts); err != nil {
					return err
				}
			}
			return a.printSettings(t.ID, ts, memory.Effective(cfg.Settings(), ts, memory.ThreadSettings{}))
		},
	}
	f := cmd.Flags()
	f.Int("limit", 0, "token_limit: the model's context window")
	f.Float64("ratio", 0, "target_ratio: pinned + kept messages fit in limit x ratio")
	f.Float64("trigger", 0, "trigger_ratio: compact when the context passes limit x trigger")
	f.Int("reserve", 0, "reserve_tokens: held back for tool definitions and the reply")
	f.String("strategy", "", "strategy: how the thread is compacted (summarize)")
	f.String("model", "", "model: the model the thread runs against")
	f.StringArrayVar(&unset, "unset", nil, "clear a setting (token_limit, target_ratio, trigger_ratio, reserve_tokens, strategy, model); repeatable")
	return cmd
}

// printSettings prints the settings stored on a thread and the effective ones.
func (a *app) printSettings(thread string, stored memory.ThreadSettings, eff memory.Settings) error {
	if a.json {
		return a.printJSON(map[string]any{
			"thread": thread, "settings": stored,
			"effective": map[string]any{
				memory.KeyTokenLimit: eff.TokenLimit, memory.KeyTargetRatio: eff.TargetRatio, memory.KeyTriggerRatio: eff.TriggerRatio,
				memory.KeyReserveTokens: eff.ReserveTokens, memory.KeyStrategy: eff.Strategy,
			},
		})
	}
	fmt.Fprintf(a.out, "settings of %s (effective; from the thread or the config):\n", termLine(thread))
	tw := newTable(a.out, "  KEY\tVALUE\tFROM")
	from := func(set bool) string {
		if set {
			return "thread"
		}
		return "config"
	}
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	tw.row("  "+memory.KeyTokenLimit, fmt.Sprint(eff.TokenLimit), from(stored.TokenLimit != nil))
	tw.row("  "+memory.KeyTargetRatio, ratio(eff.TargetRatio), from(stored.TargetRatio != nil))
	tw.row("  "+memory.KeyTriggerRatio, ratio(eff.TriggerRatio), from(stored.TriggerRatio != nil))
	tw.row("  "+memory.KeyReserveTokens, fmt.Sprint(eff.ReserveTokens), from(stored.ReserveTokens != nil))
	tw.row("  "+memory.KeyStrategy, eff.Strategy, from(stored.Strategy != ""))
	if stored.Model != "" {
		tw.row("  "+memory.KeyModel, stored.Model, "thread")
	}
	tw.flush()
	return nil
}
