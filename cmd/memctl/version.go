package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/db"
)

// Build stamps, set by a release build:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD) -X main.date=2025-01-02T03:04:05Z"
//
// Unset, they are read from the build information the go command records (the module version
// of `go install ...@version`, the VCS revision and time of a build in a checkout).
var version, commit, date string

// buildStamp returns the version, commit and build date of this binary ("unknown" when
// nothing recorded them).
func buildStamp() (v, c, d string, modified bool) {
	v, c, d = version, commit, date
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.time":
				if d == "" {
					d = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	if d == "" {
		d = "unknown"
	}
	return v, c, d, modified
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Print the version, the commit and the build date of memctl, the schema version it writes
and the Go release that built it. A release build stamps them (see scripts/release); otherwise
they come from what the go command recorded: the module version of "go install ...@VERSION",
the revision and commit time of a build in a checkout ("+dirty" when it had local changes).`,
		Example: "  memctl version\n  memctl version --json | jq -r .commit",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c, d, dirty := buildStamp()
			if a.json {
				return a.printJSON(map[string]any{"version": v, "commit": c, "date": d, "modified": dirty,
					"schema": db.SQLiteVersion, "go": runtime.Version()})
			}
			if dirty {
				c += "+dirty"
			}
			fmt.Fprintf(a.out, "memctl %s (commit %s, built %s, schema %d, %s)\n", v, c, d, db.SQLiteVersion, runtime.Version())
			return nil
		},
	}
}
