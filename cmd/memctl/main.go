// Command memctl inspects and compacts the conversation memory of LLM agents kept by
// memcascade in one SQLite file. Its commands, flags, JSON fields and exit codes are a stable
// contract (see README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/memory"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the work failed, or what it names does not exist
	exitUsage = 2 // usage or input error
)

// usageError marks an error as the caller's: a bad flag, file or config (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

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
	// logLevel and logFormat are --log-level and --log-format; logger writes to stderr.
	logLevel, logFormat string
	logger              *slog.Logger

	cfg   *config.Config
	store *memory.Store
}

// run runs memctl with args and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv,
		out: &termWriter{w: stdout}, errOut: &termWriter{w: stderr}}
	defer a.close()
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.out.Flush()
	a.errOut.Flush()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "memctl: %s\n", termLine(oneLine(err.Error())))
	return exitCode(err)
}

func exitCode(err error) int {
	var ue usageError
	var ie *memory.InputError
	var ce *config.Error
	switch {
	case errors.As(err, &ue), errors.As(err, &ie), errors.As(err, &ce):
		return exitUsage
	}
	return exitFail
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func (a *app) close() {
	if a.store != nil {
		a.store.Close()
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memctl",
		Short: "Inspect and compact the conversation memory of LLM agents",
		Long: `memctl reads and writes a memcascade database: one SQLite file holding an agent's
conversations as append-only threads, the compaction reports, the provider cooldowns and
the attempt log.`,
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		// With Args set, cobra runs RunE for a word that is no command instead of failing with
		// an error of its own, so that an unknown command is a usage error (exit 2).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for \"memctl\"", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return usageError{errors.New(msg + "; see memctl --help")}
		},
	}
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return a.newLogger() }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbPath, "db", "", "the SQLite file (default $MEMCTL_DB, else $XDG_DATA_HOME/memctl/memctl.db, ~/.local/share/memctl/memctl.db when unset)")
	pf.StringVar(&a.configPath, "config", "", "the config file (default $MEMCTL_CONFIG, else $XDG_CONFIG_HOME/memctl/config.yaml if it exists, else built-in)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")
	pf.StringVar(&a.logLevel, "log-level", "warn", "log compactions, attempts and cooldowns to stderr from this level: debug, info, warn or error")
	pf.StringVar(&a.logFormat, "log-format", "text", "log record format: text or json")
	root.AddCommand(
		a.importCommand(), a.exportCommand(), a.threadsCommand(), a.showCommand(), a.deleteCommand(),
		a.tokensCommand(), a.searchCommand(),
		a.compactCommand(), a.setCommand(), a.reportsCommand(), a.reportCommand(), a.revertCommand(),
		a.providersCommand(), a.attemptsCommand(), a.configCommand(), a.versionCommand(),
		a.backupCommand(), a.pruneCommand(), a.vacuumCommand(), a.checkCommand(),
		a.serveCommand(),
	)
	return root
}

// args wraps a positional-argument check so its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
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

// open opens the store once, with the config's model and encoding for new threads. A missing
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
	s, err := memory.OpenWith(ctx, loc.path, memory.OpenOptions{NoCreate: mode != forCreating, ReadOnly: mode == forReading, Logger: a.logger})
	if errors.Is(err, memory.ErrOlderSchema) {
		return nil, fmt.Errorf("%w (import, compact, revert and delete do)", err)
	}
	if err != nil {
		return nil, err
	}
	s.DefaultModel, s.Encoding = cfg.Model, cfg.Encoding
	if c, err := cfg.Counter(); err != nil || c != nil {
		if err == nil {
			err = s.UseCounter(c)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	a.store = s
	return s, nil
}

// isTerminal reports whether f is an interactive terminal (not /dev/null, which is a character
// device too).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd())
}
