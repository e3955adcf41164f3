package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/config"
)

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
			if loc.isURL() {
				dbState = "a server database: a command that writes creates its schema when missing"
			} else if _, err := os.Stat(loc.path); err == nil {
				dbState = "exists"
			}
			if a.json {
				return a.printConfigJSON(cfg, path, loc.shown())
			}
			if path != "" {
				fmt.Fprintf(a.out, "# config: %s (from %s)\n", path, from)
			} else {
				fmt.Fprintf(a.out, "# config: %s (%s)\n", config.DefaultSource, from)
			}
			fmt.Fprintf(a.out, "# database: %s (from %s; %s)\n%s", loc.shown(), loc.from, dbState, cfg.YAML())
			return nil
		},
	}
}

// printConfigJSON prints cfg as JSON with "database" (its path) and "config_file" (path, null
// for the built-in default).
func (a *app) printConfigJSON(cfg config.Config, path, database string) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	m["database"] = database
	m["config_file"] = nil
	if path != "" {
		m["config_file"] = path
	}
	return a.printJSON(m)
}
