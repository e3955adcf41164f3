package main

import (
	"context"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
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

// openCascade opens the store (see open) and builds the config's cascade on its database, for
// a command that reads or resets its state (a compaction builds its own: see newCompactor).
func (a *app) openCascade(ctx context.Context, mode openMode) (*cascade.Cascade, error) {
	s, cfg, err := a.openWithConfig(ctx, mode)
	if err != nil {
		return nil, err
	}
	return cfg.NewCascade(s.DB(), nil)
}

func (a *app) attemptsCommand() *cobra.Command {
	var provider string
	var limit int
	var compaction int64
	cmd := &cobra.Command{
		Use:   "attempts",
		Short: "Print the provider attempt log, newest first (one compaction's: oldest first)",
		Long: `Print the log of requests to providers: every attempt of every compaction, newest first, or
with --compaction ID the attempts of one compaction in the order they ran.

Columns: ID the attempt; COMPACTION the compaction it served ("-": none); PROVIDER and MODEL
who was asked;
OUTCOME ok, error, skipped_cooldown (the provider was cooling down), skipped_window (the
input does not fit its context window) or skipped_budget (no time left); HTTP the status code
(0: no response); CLASS the kind of error (timeout, network, rate_limited, server, auth,
bad_request, context_length, bad_response, canceled); MS how long it took in milliseconds;
STARTED when it began (UTC unless --local-time); ERROR the error, keys and secrets redacted.`,
		Example: "  memctl attempts --provider local --limit 20\n  memctl attempts --compaction 7",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("compaction") && compaction < 1 {
				return usagef("attempts: --compaction %d must be a compaction id (at least 1)", compaction)
			}
			ctx := cmd.Context()
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			var at []cascade.Attempt
			if compaction > 0 {
				if !cmd.Flags().Changed("limit") {
					limit = math.MaxInt32 // one compaction's attempts: all of them, as report ID lists them
				}
				at, err = compactionAttempts(ctx, s.DB(), compaction, provider, limit)
			} else {
				at, err = cascade.Attempts(ctx, s.DB(), provider, limit)
			}
			if err != nil {
				return err
			}
			return a.printTable(at, "ID\tCOMPACTION\tPROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\tSTARTED ("+a.zone()+")\tERROR", func(tw *table) {
				for _, x := range at {
					comp := "-"
					if x.CompactionID != nil {
						comp = fmt.Sprint(*x.CompactionID)
					}
					tw.row(fmt.Sprint(x.ID), comp, x.Provider, x.Model, x.Outcome, fmt.Sprint(x.HTTPStatus), x.ErrorClass,
						fmt.Sprint(x.DurationMs), a.timeText(x.StartedAt), oneLine(x.Error))
				}
			})
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's attempts")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many attempts (with --compaction: all unless given)")
	cmd.Flags().Int64Var(&compaction, "compaction", 0, "only the attempts of this compaction, oldest first")
	return cmd
}

// compactionAttempts lists one compaction's attempts, oldest first, of provider ("" for
// every one), at most limit.
func compactionAttempts(ctx context.Context, sqldb *db.Handle, id int64, provider string, limit int) ([]cascade.Attempt, error) {
	all, err := cascade.CompactionAttempts(ctx, sqldb, id)
	if err != nil {
		return nil, err
	}
	at := make([]cascade.Attempt, 0, len(all))
	for _, x := range all {
		if (provider == "" || x.Provider == provider) && len(at) < limit {
			at = append(at, x)
		}
	}
	return at, nil
}

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
			casc.Logger = a.logger
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
