package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/db"
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
			h, loc, err := a.openDatabase(ctx, forReading)
			if err != nil {
				return err
			}
			if err := h.Backup(ctx, dest); err != nil {
				if errors.Is(err, db.ErrBackupExists) {
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
