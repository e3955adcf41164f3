package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

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
			h, loc, err := a.openDatabase(ctx, forReading)
			if err != nil {
				return err
			}
			cerr := h.Check(ctx)
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
