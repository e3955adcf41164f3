package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

// parseAge reads --older-than: a Go duration (90m, 720h) or whole days (30d). Negative is refused.
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > 100000 {
			return 0, usagef("--older-than %q: want a duration such as 720h, 90m or 30d", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, usagef("--older-than %q: want a duration such as 720h, 90m or 30d", s)
		}
	}
	if d < 0 {
		return 0, usagef("--older-than %s: must not be negative", s)
	}
	return d, nil
}

func (a *app) pruneCommand() *cobra.Command {
	var olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION [--dry-run]",
		Short: "Delete old failed, ineffective and reverted reports and attempts",
		Long: `Delete what only grows, older than DURATION (720h, 90m, 30d; 0s: everything up to now):
compaction reports that are failed, ineffective or reverted, with their attempts, and attempts
made for no compaction. Never a message, never an applied compaction, its summary or its
attempts, never a compaction an applied one was planned on, and never a thread's newest
applied or ineffective compaction (automatic compaction waits on it): the history, the active
context and every applied report stay byte-identical. One transaction. --dry-run lists what
would go and deletes nothing. Columns: ID, THREAD and STATUS of each report, SETTLED when it
reached its status, ATTEMPTS deleted with it. "memctl vacuum" then returns the space.`,
		Example: "  memctl prune --older-than 30d --dry-run\n  memctl prune --older-than 720h && memctl vacuum",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("older-than") {
				return usagef("prune: --older-than DURATION is required (such as 720h or 30d; 0s prunes everything up to now)")
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return err
			}
			return a.prune(ctx, memory.PruneOptions{OlderThan: age, DryRun: dryRun})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "only what is older than this (720h, 90m, 30d; 0s: everything)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	return cmd
}

// prune deletes (or with opt.DryRun lists) what prune deletes and prints it.
func (a *app) prune(ctx context.Context, opt memory.PruneOptions) error {
	s, err := a.open(ctx, writeMode(opt.DryRun))
	if err != nil {
		return err
	}
	res, err := s.Prune(ctx, opt)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(res)
	}
	verb := "deleted"
	if opt.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(a.out, "%s %d reports and %d attempts settled before %s (%s)\n", verb, len(res.Reports), res.Attempts, a.timeText(res.Before), a.zone())
	if len(res.Reports) > 0 {
		tw := newTable(a.out, "ID\tTHREAD\tSTATUS\tSETTLED ("+a.zone()+")\tATTEMPTS")
		for _, r := range res.Reports {
			tw.row(fmt.Sprint(r.ID), r.Thread, r.Status, a.timeText(r.UpdatedAt), fmt.Sprint(r.Attempts))
		}
		tw.flush()
	}
	return nil
}
