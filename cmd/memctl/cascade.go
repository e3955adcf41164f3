package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/config"
)

func (a *app) providersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "providers",
		Short:   "List the configured cascade with each provider's cooldown",
		Example: "  memctl providers\n  memctl providers --json | jq '.[] | select(.cooling_until != null)'",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := a.config()
			if err != nil {
				return err
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			casc, err := cfg.NewCascade(s.DB(), nil)
			if err != nil {
				return err
			}
			st, err := casc.Status(ctx)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(st)
			}
			tw := newTable(a.out, "NAME\tTYPE\tMODEL\tWINDOW\tCOOLING UNTIL (UTC)\tFAILURES\tLAST ERROR")
			for _, p := range st {
				until := "-"
				if p.CoolingUntil != nil {
					until = timeText(*p.CoolingUntil)
				}
				window := fmt.Sprint(p.ContextWindow)
				if p.ContextWindowAuto {
					window = "auto"
					if p.ContextWindow > 0 {
						window = fmt.Sprintf("auto (%d)", p.ContextWindow)
					}
				}
				tw.row(p.Name, p.Type, p.Model, window, until, fmt.Sprint(p.ConsecutiveFailures), oneLine(p.LastError))
			}
			tw.flush()
			return nil
		},
	}
	cmd.AddCommand(a.providersResetCommand())
	return cmd
}

func (a *app) attemptsCommand() *cobra.Command {
	var provider string
	var limit int
	var compaction int64
	cmd := &cobra.Command{
		Use:     "attempts",
		Short:   "Print the provider attempt log, newest first (one compaction's: oldest first)",
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
			var at []cascade.Attempt
			if compaction > 0 {
				at, err = compactionAttempts(ctx, s.DB(), compaction, provider, limit)
			} else {
				at, err = cascade.Attempts(ctx, s.DB(), provider, limit)
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(at)
			}
			tw := newTable(a.out, "ID\tCOMPACTION\tPROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\tSTARTED (UTC)\tERROR")
			for _, x := range at {
				comp := "-"
				if x.CompactionID != nil {
					comp = fmt.Sprint(*x.CompactionID)
				}
				tw.row(fmt.Sprint(x.ID), comp, x.Provider, x.Model, x.Outcome, fmt.Sprint(x.HTTPStatus), x.ErrorClass,
					fmt.Sprint(x.DurationMs), timeText(x.StartedAt), oneLine(x.Error))
			}
			tw.flush()
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's attempts")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many attempts")
	cmd.Flags().Int64Var(&compaction, "compaction", 0, "only the attempts of this compaction, oldest first")
	return cmd
}

// compactionAttempts lists one compaction's attempts, oldest first, of provider ("" for
// every one), at most limit.
func compactionAttempts(ctx context.Context, sqldb *sql.DB, id int64, provider string, limit int) ([]cascade.Attempt, error) {
	all, err := cascade.CompactionAttempts(ctx, sqldb, id)
	if err != nil {
		return nil, err
	}
	at := make([]cascade.Attempt, 0, len(all))
	for _, x := range all {
		if (provider == "" || x.Provider == provider) && len(at) < limit {
			at = append(at, x)
		}
	}
	return at, nil
}

func (a *app) configCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration",
		Long: `Print the effective configuration, defaults filled in, after the files memctl uses: the
config file (--config, else $MEMCTL_CONFIG, else $XDG_CONFIG_HOME/memctl/config.yaml if it
exists, else the built-in default) and the database (--db, else $MEMCTL_DB, else
$XDG_DATA_HOME/memctl/memctl.db). The working directory is never searched. API keys appear
as the names of the environment variables that hold them, never as values. With --json the
configuration gains "config_file" (null for the built-in default) and "database".`,
		Example: "  memctl config\n  memctl --config agent.yaml config --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			path, from := a.configLocation()
			loc, err := a.database()
			if err != nil {
				return err
			}
			dbState := "does not exist yet: a command that writes creates it"
			if _, err := os.Stat(loc.path); err == nil {
				dbState = "exists"
			}
			if a.json {
				raw, err := json.Marshal(cfg)
				if err != nil {
					return err
				}
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					return err
				}
				m["database"] = loc.path
				m["config_file"] = nil
				if path != "" {
					m["config_file"] = path
				}
				return a.printJSON(m)
			}
			if path != "" {
				fmt.Fprintf(a.out, "# config: %s (from %s)\n", path, from)
			} else {
				fmt.Fprintf(a.out, "# config: %s (%s)\n", config.DefaultSource, from)
			}
			fmt.Fprintf(a.out, "# database: %s (from %s; %s)\n%s", loc.path, loc.from, dbState, cfg.YAML())
			return nil
		},
	}
}
