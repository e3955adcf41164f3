package main

import (
	"fmt"
	"path/filepath"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
)

// dbLocation is the database memctl uses and where that choice came from.
type dbLocation struct {
	path string
	from string // "--db", "$MEMCTL_DB" or "the user data directory"
	// userDir is set for the default location: the directory a writing command creates (0700).
	userDir string
}

// shown is the database as output may show it: a URL without user, password or parameters.
func (l dbLocation) shown() string { return db.Display(l.path) }

// isURL reports whether the database is a server's (postgres://...), not a file.
func (l dbLocation) isURL() bool { return db.URLScheme(l.path) != "" }

// database returns the database path: --db, else $MEMCTL_DB, else memctl.db in the memctl
// directory of the user data directory ($XDG_DATA_HOME/memctl, ~/.local/share/memctl; the
// platform's user data directory on macOS and Windows). The working directory is never used.
func (a *app) database() (dbLocation, error) {
	if a.dbPath != "" {
		return dbLocation{path: a.dbPath, from: "--db"}, nil
	}
	if v := a.getenv("MEMCTL_DB"); v != "" {
		return dbLocation{path: v, from: "$MEMCTL_DB"}, nil
	}
	base, err := config.UserDir("data")
	if err != nil {
		return dbLocation{}, usagef("no database path: %v; name one with --db or $MEMCTL_DB", err)
	}
	dir := filepath.Join(base, "memctl")
	return dbLocation{path: filepath.Join(dir, "memctl.db"), from: "the user data directory", userDir: dir}, nil
}

// configLocation is the config file memctl reads ("" for the built-in default) and where that
// choice came from.
func (a *app) configLocation() (path, from string) {
	switch {
	case a.configPath != "":
		return a.configPath, "--config"
	case a.getenv(config.EnvVar) != "":
		return a.getenv(config.EnvVar), "$" + config.EnvVar
	}
	if p := config.Locate(""); p != "" {
		return p, "the user config file"
	}
	user, err := config.UserPath()
	if err != nil {
		return "", fmt.Sprintf("no user config directory: %v", err)
	}
	return "", "no " + user
}
