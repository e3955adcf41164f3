package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memcascade/memcascade/compact"
)

// The flags of the turn and masking knobs (memctl set), by the key each sets.
var knobFlags = map[string]string{
	compact.KeyKeepTurns: "keep-turns", compact.KeyCompactEveryTurns: "compact-every-turns",
	compact.KeyMaskKeepResults: "mask-keep-tool-results", compact.KeyMaskExcludeTools: "mask-exclude-tools",
	compact.KeyMaskClearInputs: "mask-clear-tool-inputs", compact.KeyMaskClearThinking: "mask-clear-thinking",
}

func init() {
	for k, v := range knobFlags {
		settingFlags[k] = v
	}
}

// addKnobFlags defines on f the flags of the knobs.
func addKnobFlags(f *pflag.FlagSet) {
	f.Int("keep-turns", 0, "keep_turns: keep the newest N user turns whole while they fit (0: off)")
	f.Int("compact-every-turns", 0, "compact_every_turns: a compaction every N user turns, even under the trigger (0: off)")
	f.Int("mask-keep-tool-results", 0, "mask.keep_tool_results: the newest N tool results stay verbatim (0: the kept window decides)")
	f.StringSlice("mask-exclude-tools", nil, "mask.exclude_tools: tools whose results are never masked, comma-separated (\"\": none)")
	f.Bool("mask-clear-tool-inputs", false, "mask.clear_tool_inputs: old tool calls' arguments become a placeholder in the view (=false to turn off)")
	f.Bool("mask-clear-thinking", false, "mask.clear_thinking: old reasoning leaves the view (=false to turn off)")
}

// knobsFromFlags sets on ts the knobs the flags of cmd give (none when cmd has no such flag),
// each checked as given.
func knobsFromFlags(cmd *cobra.Command, ts *compact.ThreadSettings) error {
	f := cmd.Flags()
	changed := func(name string) bool { return f.Lookup(name) != nil && f.Changed(name) }
	m := compact.ThreadMask{}
	if ts.Mask != nil {
		m = *ts.Mask
	}
	for _, c := range []struct {
		name string
		dst  **int
	}{{"keep-turns", &ts.KeepTurns}, {"compact-every-turns", &ts.CompactEveryTurns}, {"mask-keep-tool-results", &m.KeepToolResults}} {
		if changed(c.name) {
			v, _ := f.GetInt(c.name)
			if v < 0 {
				return usagef("--%s %d: must be zero (off) or a positive whole number", c.name, v)
			}
			*c.dst = &v
		}
	}
	if changed("mask-exclude-tools") {
		v, _ := f.GetStringSlice("mask-exclude-tools")
		names := []string{}
		for _, n := range v {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		m.ExcludeTools = &names
	}
	for _, c := range []struct {
		name string
		dst  **bool
	}{{"mask-clear-tool-inputs", &m.ClearToolInputs}, {"mask-clear-thinking", &m.ClearThinking}} {
		if changed(c.name) {
			v, _ := f.GetBool(c.name)
			*c.dst = &v
		}
	}
	if m != (compact.ThreadMask{}) {
		ts.Mask = &m
	}
	return nil
}
