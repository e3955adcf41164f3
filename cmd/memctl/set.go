package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/spf13/cobra"
)

func (a *app) setCommand() *cobra.Command {
	var unset []string
	cmd := &cobra.Command{
		Use:               "set THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Store compaction settings on a thread",
		Long: `Store compaction settings on THREAD; the settings not named keep their stored value, and
--unset KEY clears one (the keys of the config's compaction section: token_limit,
mask.exclude_tools...; see --unset below). Every key of that section but attempt_timeout has its
flag, and --model names the thread's model. Every compaction of the thread uses them (memctl
compact, memctl serve, MCP's memory_compact): a flag of compact wins over them, and they win
over the config file, which wins over the built-in defaults.
--cascade NAME and --part-cascade NAME name a cascade of the config's cascades section (or
default, the top-level one; --part-cascade none turns the part cascade off): a name the config
does not define is refused (exit 2). --prompt-file F is read now, checked, and its text stored
on the thread. Without a flag, prints the thread's settings.`,
		Example: `  memctl set support-42 --limit 8000 --reserve 1000
  memctl set support-42 --unset token_limit --json
  memctl set support-42 --keep-turns 3 --mask-keep-tool-results 5 --mask-exclude-tools read_file,grep
  memctl set support-42 --cascade cloud --part-cascade cheap --summary-max-tokens 1024
  memctl set support-42 --prompt-file prompts/support.txt --on-failure fit --unset cascade`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.setThread(cmd, args[0], unset)
		},
	}
	f := cmd.Flags()
	addSettingFlags(f, "token_limit: the model's context window")
	f.Int("reserve", 0, "reserve_tokens: held back for tool definitions and the reply")
	f.String("strategy", "", "strategy: how the thread is compacted (summarize)")
	f.String("model", "", "model: the model the thread runs against")
	addMoreFlags(f)
	addKnobFlags(f)
	cmd.RegisterFlagCompletionFunc("cascade", a.completeCascade)
	cmd.RegisterFlagCompletionFunc("part-cascade", a.completePartCascade)
	f.StringArrayVar(&unset, "unset", nil, "clear a setting ("+strings.Join(compact.ThreadSettingKeys, ", ")+"); repeatable")
	return cmd
}

// setThread stores on thread the settings the flags of cmd give, without those unset names,
// and prints the thread's settings; with neither, it only prints them.
func (a *app) setThread(cmd *cobra.Command, thread string, unset []string) error {
	ctx := cmd.Context()
	if err := threadArg(thread); err != nil {
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
	if err := checkUnset(cmd, unset); err != nil {
		return err
	}
	mode := forWriting
	if given.IsZero() && len(unset) == 0 {
		mode = forReading
	}
	s, t, err := a.openThread(ctx, mode, thread)
	if err != nil {
		return err
	}
	ts, err := compact.SettingsOf(t)
	if err != nil {
		return err
	}
	if mode == forWriting {
		for _, key := range unset {
			ts.Unset(key) // checked by checkUnset
		}
		ts = ts.Over(given)
		prefix := "set " + t.ID
		if err := ts.Validate(); err != nil {
			return settingsError(cmd, prefix, err)
		}
		eff, err := compact.Resolve(cfg.Settings(), ts, compact.ThreadSettings{})
		if err != nil {
			return settingsError(cmd, prefix+" (with the config)", err)
		}
		if err := unknownCascade(cmd, prefix, cfg, eff); err != nil {
			return err
		}
		if err := compact.SaveThreadSettings(ctx, s, t.ID, ts); err != nil {
			return err
		}
	}
	return a.printSettings(t.ID, ts, compact.Effective(cfg.Settings(), ts, compact.ThreadSettings{}), promptFileOf(ts, cfg))
}

// checkUnset refuses an --unset KEY that names no setting, or one a flag of cmd sets too.
func checkUnset(cmd *cobra.Command, unset []string) error {
	for _, key := range unset {
		var probe compact.ThreadSettings
		if err := probe.Unset(key); err != nil {
			return usagef("--unset %s: %v", key, err)
		}
		if name := settingFlags[key]; cmd.Flags().Changed(name) {
			return usagef("--unset %s: --%s sets it in the same command", key, name)
		}
	}
	return nil
}

// printSettings prints the settings stored on a thread and the effective ones; promptFile is
// the file the prompt in effect was read from ("" for the built-in instructions).
func (a *app) printSettings(thread string, stored compact.ThreadSettings, eff compact.Settings, promptFile string) error {
	if a.json {
		effective := map[string]any{
			compact.KeyTokenLimit: eff.TokenLimit, compact.KeyTargetRatio: eff.TargetRatio, compact.KeyTriggerRatio: eff.TriggerRatio,
			compact.KeyReserveTokens: eff.ReserveTokens, compact.KeyStrategy: eff.Strategy,
			compact.KeyKeepTurns: eff.KeepTurns, compact.KeyCompactEveryTurns: eff.CompactEveryTurns,
			"mask": map[string]any{"keep_tool_results": eff.Mask.KeepToolResults, "exclude_tools": nonNilStrings(eff.Mask.ExcludeTools),
				"clear_tool_inputs": eff.Mask.ClearToolInputs, "clear_thinking": eff.Mask.ClearThinking},
		}
		maps.Copy(effective, effectiveMore(eff, promptFile))
		shown := stored
		shown.Prompt = "" // the file's text: its name says which
		return a.printJSON(map[string]any{"thread": thread, "settings": shown, "effective": effective})
	}
	fmt.Fprintf(a.out, "settings of %s (effective; from the thread or the config):\n", termLine(thread))
	tw := newTable(a.out, "  KEY\tVALUE\tFROM")
	for _, key := range compact.ThreadSettingKeys {
		from := "config"
		if stored.Has(key) {
			from = "thread"
		}
		value := eff.Value(key)
		switch key {
		case compact.KeyModel:
			if stored.Model == "" {
				continue
			}
			value = stored.Model
		case compact.KeyTotalTimeout:
			value = config.Duration(eff.TotalTimeout).String()
		case compact.KeyPromptFile:
			if promptFile == "" {
				value = "built-in"
			} else {
				value = promptFile
			}
		}
		tw.row("  "+key, termLine(value), from)
	}
	tw.flush()
	return nil
}

// nonNilStrings is s, [] for none.
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
