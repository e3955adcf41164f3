package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// app holds what every command shares: its streams, the global flags, and the store and
// config once opened.
type app struct {
	stdin io.Reader
	// stdout and stderr are the streams as given: JSON is written to stdout as it is.
	stdout, stderr io.Writer
	// out and errOut are the same streams for human text, through termWriter: control
	// characters from stored text are shown escaped, never sent to a terminal.
	out, errOut *termWriter
	getenv      func(string) string

	dbPath, configPath string
	json               bool
	// localTime: --local-time, times in human output in the local zone.
	localTime bool
	// showLimit is how many bytes of a message's text show prints (0: all).
	showLimit int
	// logLevel and logFormat are --log-level and --log-format; logger writes to stderr.
	logLevel, logFormat string
	logger              *slog.Logger

	cfg *config.Config
	// h is the database open opened; store is the store built on it, and the cascades of the
	// commands that compact or read provider state are built on it too.
	h     *db.Handle
	store *memory.Store
	// cleanup runs when the command ends (temporary files that could not be unlinked early).
	cleanup []func()
}

func (a *app) close() {
	if a.store != nil {
		a.store.Close()
	}
	if a.h != nil {
		a.h.Close()
	}
	for _, f := range a.cleanup {
		f()
	}
}

// config loads the configuration once: see configLocation.
func (a *app) config() (config.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	path, _ := a.configLocation()
	cfg, err := config.Load(path)
	if err != nil {
		return config.Config{}, err
	}
	a.cfg = &cfg
	return cfg, nil
}

// How a command may use the database.
type openMode int

const (
	// forReading: the database must exist and be up to date; nothing is created or migrated.
	forReading openMode = iota
	// forWriting: the database must exist; an older schema is migrated.
	forWriting
	// forCreating: a missing database is created (its directory too, 0700, at the default
	// location), mode 0600.
	forCreating
)

// open opens the database once and builds the store on it, with the config's model, encoding
// and vocabulary file for new threads; the app keeps both (a.h, a.store) until close. A missing
// database is "no database at PATH" (exit 1) unless mode is forCreating.
func (a *app) open(ctx context.Context, mode openMode) (*memory.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	loc, err := a.database()
	if err != nil {
		return nil, err
	}
	if mode == forCreating && loc.userDir != "" {
		if err := os.MkdirAll(loc.userDir, 0o700); err != nil {
			return nil, fmt.Errorf("create the database directory: %w", err)
		}
	}
	h, err := db.OpenHandle(ctx, loc.path, db.Options{NoCreate: mode != forCreating, ReadOnly: mode == forReading})
	if errors.Is(err, db.ErrOlderSchema) {
		return nil, fmt.Errorf("%w (import, compact, revert and delete do)", err)
	}
	if err != nil {
		return nil, err
	}
	opt := memory.Options{DefaultModel: cfg.Model, Encoding: cfg.Encoding, Logger: a.logger}
	c, err := cfg.Counter()
	if c != nil {
		opt.Counter = c
	}
	var s *memory.Store
	if err == nil {
		s, err = memory.New(ctx, h, opt)
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	a.h, a.store = h, s
	return s, nil
}

// openWithConfig opens the store (see open) and returns it with the config it was opened with.
func (a *app) openWithConfig(ctx context.Context, mode openMode) (*memory.Store, config.Config, error) {
	s, err := a.open(ctx, mode)
	if err != nil {
		return nil, config.Config{}, err
	}
	return s, *a.cfg, nil
}

// openThread opens the store (see open) and reads thread id: an unknown one is exit 1.
func (a *app) openThread(ctx context.Context, mode openMode, id string) (*memory.Store, memory.Thread, error) {
	s, err := a.open(ctx, mode)
	if err != nil {
		return nil, memory.Thread{}, err
	}
	t, err := s.Thread(ctx, id)
	if err != nil {
		return nil, memory.Thread{}, err
	}
	return s, t, nil
}

// writeMode is how a command that writes unless --dry-run opens the database.
func writeMode(dryRun bool) openMode {
	if dryRun {
		return forReading
	}
	return forWriting
}

// newCompactor builds what a command that compacts needs, once the store is open (see open):
// the config's cascade on the database the app opened, with opt (its Count sizes the
// extractive summaries and counts the usage of a server that sends none, nil for the built-in
// count; its Logger and Observe receive its records and events), and the compactor over the
// store that summarizes through it, with comp (its Logger and Progress). Both redact with the
// redactor of the config's patterns (see config.Config.NewCompactor).
func (a *app) newCompactor(opt cascade.Options, comp compact.Config) (*compact.Compactor, *cascade.Cascade, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, err
	}
	return cfg.NewCompactor(a.h, a.store, opt, comp)
}

// storeFor checks the thread argument, then opens the store (see open).
func (a *app) storeFor(ctx context.Context, mode openMode, thread string) (*memory.Store, error) {
	if err := threadArg(thread); err != nil {
		return nil, err
	}
	return a.open(ctx, mode)
}

// openDatabase opens the store (see open) and returns the database handle under it, for the
// housekeeping of the database itself (backup, vacuum, check: db.Handle's), with its location.
func (a *app) openDatabase(ctx context.Context, mode openMode) (*db.Handle, dbLocation, error) {
	if _, err := a.open(ctx, mode); err != nil {
		return nil, dbLocation{}, err
	}
	loc, err := a.database()
	return a.h, loc, err
}

// openCascade opens the database (see open) and builds the config's cascade on it, on the
// store's clock and with the app's logger, for a command that reads or resets its state (a
// compaction builds its own: see newCompactor).
func (a *app) openCascade(ctx context.Context, mode openMode) (*cascade.Cascade, error) {
	s, cfg, err := a.openWithConfig(ctx, mode)
	if err != nil {
		return nil, err
	}
	return cfg.NewCascade(a.h, cascade.Options{Now: s.Now, Logger: a.logger})
}

// storeWithConfig checks a thread argument and opens the store for writing.
func (a *app) storeWithConfig(cmd *cobra.Command, thread string) (*memory.Store, config.Config, error) {
	if err := threadArg(thread); err != nil {
		return nil, config.Config{}, err
	}
	return a.openWithConfig(cmd.Context(), forWriting)
}
