package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

func (a *app) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup PATH",
		Short: "Write a consistent copy of the database to PATH",
		Long: `Write a consistent copy of the database to PATH (SQLite's VACUUM INTO) while agents keep
writing: the copy holds every transaction committed before the backup started and is a
compacted, intact database of its own, mode 0600. An existing PATH is refused (exit 2): a
backup never overwrites a file. A PostgreSQL database is refused too (exit 2): back up a
server with its own tools (pg_dump).`,
		Example: "  memctl backup ~/backups/memctl-$(date +%F).db\n  memctl --db agent.db backup agent-copy.db --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dest := args[0]
			if dest == "" {
				return usagef("backup: empty PATH")
			}
			loc, err := a.database()
			if err != nil {
				return err
			}
			if loc.isURL() {
				return usagef("backup: %s is a PostgreSQL database, and backup copies an SQLite file: back up the server with its own tools (pg_dump)", loc.shown())
			}
			if _, err := os.Lstat(dest); err == nil {
				return usagef("backup: %s already exists; a backup never overwrites a file", dest)
			}
			s, loc, err := a.openDatabase(ctx, forReading)
			if err != nil {
				return err
			}
			if err := s.Backup(ctx, dest); err != nil {
				if errors.Is(err, memory.ErrBackupExists) {
					return usagef("backup: %s already exists; a backup never overwrites a file", dest)
				}
				return err
			}
			st, err := os.Stat(dest)
			if err != nil {
				return err
			}
			return a.printResult(map[string]any{"database": loc.shown(), "backup": dest, "bytes": st.Size()},
				"backed up %s to %s (%s)\n", loc.shown(), dest, byteSize(st.Size()))
		},
	}
}

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

func (a *app) vacuumCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "vacuum",
		Short: "Rebuild the database file to return unused space",
		Long: `Rebuild the database file (SQLite's VACUUM) so that the space of deleted threads and
pruned reports goes back to the file system, and truncate the write-ahead log. It waits for
writers in other processes; run it when agents are quiet. Prints the file size before and
after (database and write-ahead log together). On PostgreSQL it runs VACUUM (ANALYZE) on
memcascade's tables: the space of deleted rows becomes reusable (the server keeps it) and the
planner's statistics are refreshed; the sizes are those of the tables and their indexes.`,
		Example: "  memctl prune --older-than 30d && memctl vacuum",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, loc, err := a.openDatabase(ctx, forWriting)
			if err != nil {
				return err
			}
			before, err := s.Size(ctx)
			if err != nil {
				return err
			}
			if err := s.Vacuum(ctx); err != nil {
				return err
			}
			after, err := s.Size(ctx)
			if err != nil {
				return err
			}
			return a.printResult(map[string]any{"database": loc.shown(), "bytes_before": before, "bytes_after": after},
				"vacuumed %s: %s -> %s\n", loc.shown(), byteSize(before), byteSize(after))
		},
	}
}

// openDatabase opens the store (see open) and returns it with its location.
func (a *app) openDatabase(ctx context.Context, mode openMode) (*memory.Store, dbLocation, error) {
	s, err := a.open(ctx, mode)
	if err != nil {
		return nil, dbLocation{}, err
	}
	loc, err := a.database()
	return s, loc, err
}

func (a *app) checkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify the database: integrity, foreign keys, full-text indexes",
		Long: `Verify the database: SQLite's integrity_check, the foreign keys, and both full-text indexes
(messages and summaries) against the text they index; on PostgreSQL, whose server keeps its
own integrity, the schema version and that each thread's messages run 1..its last seq with no
gap. Prints "ok" and exits 0 when intact;
otherwise exits 1 with one line naming what is wrong. With --json: {"database", "ok", "error"}
on stdout, exit 1 when not ok.`,
		Example: "  memctl check\n  memctl --db backup.db check --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, loc, err := a.openDatabase(ctx, forReading)
			if err != nil {
				return err
			}
			cerr := s.Check(ctx)
			if a.json {
				out := map[string]any{"database": loc.shown(), "ok": cerr == nil, "error": ""}
				if cerr != nil {
					out["error"] = cerr.Error()
				}
				if err := a.printJSON(out); err != nil {
					return err
				}
			}
			if cerr != nil {
				return fmt.Errorf("check %s: %w", loc.shown(), cerr)
			}
			if !a.json {
				what := "integrity, foreign keys, full-text indexes"
				if loc.isURL() {
					what = "schema version, message sequences"
				}
				fmt.Fprintf(a.out, "ok: %s (%s)\n", loc.shown(), what)
			}
			return nil
		},
	}
}
