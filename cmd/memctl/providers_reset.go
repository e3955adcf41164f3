package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
)

func (a *app) providersResetCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "reset NAME | --all",
		Short: "Clear a provider's cooldown and failure count",
		Long: `Clear the cooldown and the consecutive-failure count of provider NAME (a name of the
config's cascade, or one with stored state), after its server was fixed: the next compaction
tries it at once. --all clears every provider with stored state. An unknown NAME exits 1.`,
		Example: "  memctl providers reset local\n  memctl providers reset --all",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			switch {
			case all && len(args) > 0:
				return usagef("providers reset: give NAME or --all, not both")
			case !all && len(args) == 0:
				return usagef("providers reset: name a provider, or --all for every one")
			case !all && args[0] == "":
				return usagef("providers reset: empty provider name")
			}
			casc, err := a.openCascade(ctx, forWriting)
			if err != nil {
				return err
			}
			if all {
				n, err := casc.ResetCooldowns(ctx)
				if err != nil {
					return err
				}
				return a.printResult(map[string]any{"all": true, "cleared": n}, "cleared the cooldown state of %d providers\n", n)
			}
			return a.resetProvider(ctx, casc, args[0])
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "clear every provider")
	return cmd
}

// resetProvider clears the cooldown state of provider name.
func (a *app) resetProvider(ctx context.Context, casc *cascade.Cascade, name string) error {
	cleared, err := casc.ResetCooldown(ctx, name)
	if err != nil {
		return err
	}
	format := "%s: not cooling down, no failures: nothing to clear\n"
	if cleared {
		format = "%s: cooldown and failure count cleared\n"
	}
	return a.printResult(map[string]any{"provider": name, "cleared": cleared}, format, termLine(name))
}
