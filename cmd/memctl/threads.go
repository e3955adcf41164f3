package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/serve"
)

func (a *app) threadsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "threads",
		Short: "List threads",
		Long: `List the threads of the database.

Columns: THREAD its id; MODEL the model whose tokenizer counts it; MESSAGES every message
ever appended; ACTIVE the messages of its active context (what the agent sends: summaries
included); TOKENS the tokens of the active context; LIMIT and STRATEGY its effective
token_limit and strategy (the thread's settings, else the config's; with token_limit auto, a
limit marked "auto" is the window memctl serve read from its upstream for the thread's model,
over the calibration ratio: --json has its source in settings.window and token_limit_from);
COMPACTIONS how many
compactions were applied, marked "(held)" when the breaker holds the thread after
compaction.max_failures failed compactions in a row (--json: held true; memctl compact --force
releases it); UPDATED when it last changed (UTC unless --local-time). With a price_per_mtok
set, --json has what the thread cost in dollars: compaction_cost (its compactions' provider
attempts), upstream.cost (the replies memctl serve stored) and cost, their total; each is
omitted when nothing it sums was priced.`,
		Example: `  memctl threads --json | jq '.[] | select(.active_tokens > 100000) | .id'`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, cfg, err := a.openWithConfig(ctx, forReading)
			if err != nil {
				return err
			}
			ts, err := s.Threads(ctx)
			if err != nil {
				return err
			}
			// Each thread with its effective token_limit and strategy: the thread's, else the
			// config's.
			// With token_limit auto, a thread memctl serve fitted in its upstream's window shows
			// that window's limit (its source is in settings.window).
			auto := cfg.Compaction.TokenLimit == config.WindowAuto
			views := make([]serve.ThreadView, len(ts))
			for i, t := range ts {
				tset, _ := compact.SettingsOf(t) // unreadable settings: the config's
				eff := compact.Effective(cfg.Settings(), tset, compact.ThreadSettings{})
				limit, from := serve.LimitFrom(t, cfg.Settings(), auto)
				views[i] = serve.ThreadView{Thread: t, TokenLimit: limit, TokenLimitFrom: from, Strategy: eff.Strategy}
				if from == serve.LimitFromUpstream { // compacted in the window memctl serve read
					eff = compact.Effective(cfg.Settings(), tset, compact.LimitOverride(cfg.Settings(), tset, limit))
				}
				why, err := compact.Held(ctx, s, t, eff)
				if err != nil {
					return err
				}
				views[i].Held = why != ""
			}
			return a.printTable(views, "THREAD\tMODEL\tMESSAGES\tACTIVE\tTOKENS\tLIMIT\tSTRATEGY\tCOMPACTIONS\tUPDATED ("+a.zone()+")", func(tw *table) {
				for _, t := range views {
					tw.row(t.ID, t.Model, fmt.Sprint(t.Messages), fmt.Sprint(t.ActiveMessages), fmt.Sprint(t.ActiveTokens),
						limitText(t.TokenLimit, t.TokenLimitFrom), t.Strategy, compactionsText(t), a.timeText(t.UpdatedAt))
				}
			})
		},
	}
}

// limitText is a thread's limit in the table of threads: "N", or "N auto" when it is the
// window memctl serve read from its upstream.
func limitText(limit int, from string) string {
	if from == serve.LimitFromUpstream {
		return fmt.Sprint(limit, " auto")
	}
	return fmt.Sprint(limit)
}

// compactionsText is a thread's compactions in the table of threads: "N", or "N (held)" when
// the breaker holds it.
func compactionsText(t serve.ThreadView) string {
	if t.Held {
		return fmt.Sprint(t.Compactions, " (held)")
	}
	return fmt.Sprint(t.Compactions)
}
