package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

func (a *app) reportsCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:               "reports [THREAD]",
		ValidArgsFunction: a.completeThreads,
		Short:             "List compaction reports, newest first",
		Long: `List the compaction reports of every thread, or of THREAD, newest first: applied, failed,
ineffective and reverted ones alike.

Columns: ID the compaction; THREAD its thread; STATUS applied, failed, ineffective or
reverted ("(superseded)": a later compaction folded it in); REASON why it ran (threshold,
emergency, forced); TOKENS and MESSAGES the active context before -> after ("(+N)": appended
while it ran, beside what it made); PROVIDER who wrote
the summary; REQUESTS the requests to providers; PROMPT+COMPLETION the tokens they used ("~":
counted locally where a server sent no usage); CREATED when it ran (UTC unless --local-time);
ERROR why it failed.`,
		Example: "  memctl reports\n  memctl reports support-42 --json",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			thread := ""
			if len(args) == 1 {
				thread = args[0]
				if err := threadArg(thread); err != nil {
					return err
				}
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			reps, err := s.Reports(ctx, thread, limit)
			if err != nil {
				return err
			}
			return a.printTable(reps, "ID\tTHREAD\tSTATUS\tREASON\tTOKENS\tMESSAGES\tPROVIDER\tREQUESTS\tPROMPT+COMPLETION\tCREATED ("+a.zone()+")\tERROR", func(tw *table) {
				for _, r := range reps {
					a.reportRow(tw, r)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many reports")
	return cmd
}

// reportRow is the row of r in the table of reports.
func (a *app) reportRow(tw *table, r memory.Report) {
	status := string(r.Status)
	if r.Superseded {
		status += " (superseded)"
	}
	cost := fmt.Sprintf("%d+%d", r.Usage.PromptTokens, r.Usage.CompletionTokens)
	if r.Usage.Estimated {
		cost = "~" + cost // counted locally
	}
	tw.row(fmt.Sprint(r.ID), r.Thread, status, string(r.Reason), beforeAfter(r.TokensBefore, r.TokensAfter, r.TokensAppended),
		beforeAfter(r.MessagesBefore, r.MessagesAfter, r.MessagesAppended), r.Provider, fmt.Sprint(r.Usage.Requests), cost,
		a.timeText(r.CreatedAt), oneLine(r.Error))
}

// beforeAfter is a cell of the table of reports: "4544 -> 3013", with "(+57)" for what was
// appended while the compaction ran.
func beforeAfter(before, after, appended int) string {
	if appended == 0 {
		return fmt.Sprintf("%d -> %d", before, after)
	}
	return fmt.Sprintf("%d -> %d (+%d)", before, after, appended)
}
