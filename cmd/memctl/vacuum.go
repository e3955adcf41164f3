package main

import (
	"github.com/spf13/cobra"
)

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
			h, loc, err := a.openDatabase(ctx, forWriting)
			if err != nil {
				return err
			}
			before, err := h.Size(ctx)
			if err != nil {
				return err
			}
			if err := h.Vacuum(ctx); err != nil {
				return err
			}
			after, err := h.Size(ctx)
			if err != nil {
				return err
			}
			return a.printResult(map[string]any{"database": loc.shown(), "bytes_before": before, "bytes_after": after},
				"vacuumed %s: %s -> %s\n", loc.shown(), byteSize(before), byteSize(after))
		},
	}
}
