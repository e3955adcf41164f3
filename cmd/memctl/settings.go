package main

import (
	"errors"
	"strings"

	"github.com/memcascade/memcascade/compact"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// settingFlags are the flags of the thread settings, by the key each sets.
var settingFlags = map[string]string{
	compact.KeyTokenLimit: "limit", compact.KeyTargetRatio: "ratio", compact.KeyTriggerRatio: "trigger",
	compact.KeyReserveTokens: "reserve", compact.KeyStrategy: "strategy", compact.KeyModel: "model",
}

// addSettingFlags defines on f the setting flags compact and set share: --limit (with its help
// text limitHelp), --ratio and --trigger. settingsFromFlags reads them.
func addSettingFlags(f *pflag.FlagSet, limitHelp string) {
	f.Int("limit", 0, limitHelp)
	f.Float64("ratio", 0, "target_ratio: pinned + kept messages fit in limit x ratio")
	f.Float64("trigger", 0, "trigger_ratio: compact when the context passes limit x trigger")
}

// settingsError is an impossible combination of settings as a usage error (exit 2), naming the
// flag of the key at fault when that flag was given.
func settingsError(cmd *cobra.Command, prefix string, err error) error {
	var se *compact.SettingError
	if errors.As(err, &se) {
		// The flag of the key at fault, else a flag given whose key the message names (token_limit
		// 1000 must be above reserve_tokens 1000: --reserve).
		keys := append([]string{se.Key}, compact.ThreadSettingKeys...)
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
func settingsFromFlags(cmd *cobra.Command) (compact.ThreadSettings, error) {
	var ts compact.ThreadSettings
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
	if err := knobsFromFlags(cmd, &ts); err != nil {
		return ts, err
	}
	if err := moreFromFlags(cmd, &ts); err != nil {
		return ts, err
	}
	if err := ts.Validate(); err != nil {
		return ts, settingsError(cmd, cmd.Name(), err)
	}
	return ts, nil
}
