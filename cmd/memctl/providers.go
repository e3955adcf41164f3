package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
)

func (a *app) providersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List the configured cascade with each provider's cooldown",
		Long: `List the providers of the configured cascade, in the order they are tried, with the state
recorded in the database.

Columns: NAME the provider's name in the config; TYPE openai (an OpenAI-compatible
server) or extractive (the built-in offline summarizer); MODEL the model it asks; WINDOW its
context window in tokens ("auto" when read from the server, with the value last read); COOLING UNTIL the time until which it is
skipped after failures ("-": available), in UTC unless --local-time; FAILURES its consecutive
failures; LAST ERROR the error of its last failure. "memctl providers reset" clears a cooldown.`,
		Example: "  memctl providers\n  memctl providers --json | jq '.[] | select(.cooling_until != null)'",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			casc, err := a.openCascade(ctx, forReading)
			if err != nil {
				return err
			}
			st, err := casc.Status(ctx)
			if err != nil {
				return err
			}
			return a.printTable(st, "NAME\tTYPE\tMODEL\tWINDOW\tCOOLING UNTIL ("+a.zone()+")\tFAILURES\tLAST ERROR", func(tw *table) {
				for _, p := range st {
					until := "-"
					if p.CoolingUntil != nil {
						until = a.timeText(*p.CoolingUntil)
					}
					tw.row(p.Name, p.Type, p.Model, windowText(p), until, fmt.Sprint(p.ConsecutiveFailures), oneLine(p.LastError))
				}
			})
		},
	}
	cmd.AddCommand(a.providersResetCommand())
	return cmd
}

// windowText is a provider's context window: its tokens, or auto (with the tokens the server
// reported, once known).
func windowText(p cascade.ProviderStatus) string {
	if !p.ContextWindowAuto {
		return fmt.Sprint(p.ContextWindow)
	}
	if p.ContextWindow > 0 {
		return fmt.Sprintf("auto (%d)", p.ContextWindow)
	}
	return "auto"
}
