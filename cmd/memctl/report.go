package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

func (a *app) reportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "report ID",
		Short: "Show one compaction report with its attempts and summary",
		Long: `Show compaction ID: its status and reason, the tokens and messages of the active context
before -> after (and the thread's limit; messages appended while it ran are shown apart), the
messages summarized (#first-#last; none for one that applied nothing) and kept, the
summary's size and author, the requests and tokens spent, the facts (ids, paths, numbers) of
what was summarized and whether each reached the active context, every attempt, and the
summary text.

Columns of the attempts: PROVIDER and MODEL who was asked;
OUTCOME ok, error, skipped_cooldown (the provider was cooling down), skipped_window (the
input does not fit its context window), skipped_budget (no time left) or skipped_cost (its
estimate was over compaction.max_cost); HTTP the status code
(0: no response); CLASS the kind of error (timeout, network, rate_limited, server, auth,
bad_request, context_length, bad_response, canceled); MS how long it took in milliseconds;
COST, shown when an attempt has one, what its tokens cost at the provider's price_per_mtok
("-": none); ERROR the error, keys and secrets redacted. The usage line ends with the
compaction's cost when a provider it asked has a price.`,
		Example: "  memctl report 7\n  memctl report 7 --json | jq .summary",
		Args:    args(cobra.ExactArgs(1)),
		RunE:    a.withReport(forReading, (*memory.Store).Report),
	}
}

// withReport runs a command that does op on the compaction named by its argument and prints
// the report.
func (a *app) withReport(mode openMode, op func(*memory.Store, context.Context, int64) (memory.Report, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := compactionID(args[0])
		if err != nil {
			return err
		}
		s, err := a.open(cmd.Context(), mode)
		if err != nil {
			return err
		}
		r, err := op(s, cmd.Context(), id)
		if err != nil {
			return err
		}
		return a.printReport(r)
	}
}
