package main

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

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
input does not fit its context window), skipped_budget (no time left) or skipped_cost (its
estimate was over compaction.max_cost); HTTP the status code
(0: no response); CLASS the kind of error (timeout, network, rate_limited, server, auth,
bad_request, context_length, bad_response, canceled); MS how long it took in milliseconds;
COST, shown when an attempt listed has one, what its tokens cost at the provider's
price_per_mtok ("-": no price, or no request sent); STARTED when it began (UTC unless
--local-time); ERROR the error, keys and secrets redacted.`,
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
			var at []memory.Attempt
			if compaction > 0 {
				if !cmd.Flags().Changed("limit") {
					limit = math.MaxInt32 // one compaction's attempts: all of them, as report ID lists them
				}
				at, err = compactionAttempts(ctx, s, compaction, provider, limit)
			} else {
				at, err = s.Attempts(ctx, provider, limit)
			}
			if err != nil {
				return err
			}
			priced := slices.ContainsFunc(at, func(x memory.Attempt) bool { return x.Cost != nil })
			head := "ID\tCOMPACTION\tPROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\t"
			if priced {
				head += "COST\t"
			}
			return a.printTable(at, head+"STARTED ("+a.zone()+")\tERROR", func(tw *table) {
				for _, x := range at {
					comp := "-"
					if x.CompactionID != nil {
						comp = fmt.Sprint(*x.CompactionID)
					}
					cells := []string{fmt.Sprint(x.ID), comp, x.Provider, x.Model, x.Outcome, fmt.Sprint(x.HTTPStatus), x.ErrorClass,
						fmt.Sprint(x.DurationMs)}
					if priced {
						cells = append(cells, costText(x.Cost))
					}
					tw.row(append(cells, a.timeText(x.StartedAt), oneLine(x.Error))...)
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
func compactionAttempts(ctx context.Context, s *memory.Store, id int64, provider string, limit int) ([]memory.Attempt, error) {
	all, err := s.CompactionAttempts(ctx, id)
	if err != nil {
		return nil, err
	}
	at := make([]memory.Attempt, 0, len(all))
	for _, x := range all {
		if (provider == "" || x.Provider == provider) && len(at) < limit {
			at = append(at, x)
		}
	}
	return at, nil
}
