package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

func (a *app) copyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy every thread, report, attempt and cooldown into another database",
		Long: `Copy everything the database SRC holds into the database DST: every thread with its settings
and its whole history (each message with its seq, stored JSON, token count and time), every
compaction report (summaries, views, dropped facts, the settings it ran with), the whole attempt
log and the providers' cooldowns. SRC and DST are each an SQLite file or a postgres:// URL, in
any combination: this is how a database moves from a file to a server and back. --db is not
used.

SRC is only read, in one consistent snapshot, while agents may keep writing to it; it must
exist. DST is created when missing (a file, mode 0600) and migrated like any database a command
writes to. Everything is written in one transaction: when the copy fails, DST is left as it was.

A DST that already holds any thread of SRC is refused (exit 1), naming the threads: threads
are never merged. Compaction and attempt ids are kept when DST holds none of them, so that
"memctl report ID" shows the same report on both; otherwise they take new ids after DST's
largest, in the same order, and each compaction's links to the others and its attempts follow
(the output says so; --json maps each old compaction id to its new one under "renumbered"). A
provider with a cooldown in both keeps the one that ends later, and the context window reported
last.

With --json: {"source", "destination", "threads", "messages", "compactions", "attempts",
"cooldowns", "ids": "kept" or "renumbered", "compaction_ids", "attempt_ids", "renumbered"}.`,
		Example: `  memctl copy ~/.local/share/memctl/memctl.db 'postgres://memctl@db.internal/memctl'
  memctl copy 'postgres://memctl@db.internal/memctl' snapshot.db --json`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			srcName, dstName := args[0], args[1]
			if srcName == "" || dstName == "" {
				return usagef("copy: empty SRC or DST")
			}
			src, err := memory.Open(ctx, srcName, memory.OpenOptions{Options: memory.Options{Logger: a.logger}, ReadOnly: true, NoCreate: true})
			if errors.Is(err, db.ErrOlderSchema) {
				return fmt.Errorf("copy: source %w (import, compact, revert and delete do)", err)
			}
			if err != nil {
				return fmt.Errorf("copy: source: %w", err)
			}
			defer src.Close()
			// A DST file this command creates is removed again when the copy fails.
			created := false
			if db.URLScheme(dstName) == "" {
				if _, err := os.Lstat(dstName); errors.Is(err, os.ErrNotExist) {
					created = true
				}
			}
			dst, err := memory.Open(ctx, dstName, memory.OpenOptions{Options: memory.Options{Logger: a.logger}})
			if err != nil {
				return fmt.Errorf("copy: destination: %w", err)
			}
			res, err := memory.Copy(ctx, src, dst)
			dst.Close()
			if err != nil {
				if created {
					for _, suffix := range []string{"", "-wal", "-shm"} {
						os.Remove(dstName + suffix)
					}
				}
				return err
			}
			if a.json {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.out, "copied %d threads (%d messages, %d compactions, %d attempts, %d cooldowns) from %s to %s; %s\n",
				res.Threads, res.Messages, res.Compactions, res.Attempts, res.Cooldowns, res.Source, res.Destination, idsText(res))
			return nil
		},
	}
}

// idsText says whether the copy kept the ids, and the new compaction ids when not.
func idsText(res memory.CopyResult) string {
	switch {
	case res.IDs == memory.IDsKept:
		return "ids kept"
	case res.CompactionIDs == memory.IDsKept:
		return "compaction ids kept, attempt ids renumbered"
	}
	ids := make([]int64, 0, len(res.Renumbered))
	for _, n := range res.Renumbered {
		ids = append(ids, n)
	}
	if len(ids) == 0 {
		return "ids renumbered"
	}
	slices.Sort(ids)
	return fmt.Sprintf("ids renumbered: the compactions are now %d..%d (memctl reports lists them)", ids[0], ids[len(ids)-1])
}
