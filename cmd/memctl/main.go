// Command memctl inspects and compacts the conversation memory of LLM agents kept by
// memcascade in one SQLite file. Its commands, flags, JSON fields and exit codes are a stable
// contract (see README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

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
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	dbPath, configPath string
	json               bool

	cfg   *config.Config
	store *memory.Store
}

// run runs memctl with args and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	defer a.close()
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "memctl: %s\n", oneLine(err.Error()))
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
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbPath, "db", "", "the SQLite file (default $MEMCTL_DB, else ./memctl.db)")
	pf.StringVar(&a.configPath, "config", "", "the config file (default $MEMCTL_CONFIG, else ./memctl.yaml if it exists, else built-in)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")
	root.AddCommand(
		a.importCommand(), a.exportCommand(), a.threadsCommand(), a.showCommand(), a.deleteCommand(),
		a.tokensCommand(), a.searchCommand(),
		a.compactCommand(), a.reportsCommand(), a.reportCommand(), a.revertCommand(),
		a.providersCommand(), a.attemptsCommand(), a.configCommand(), a.versionCommand(),
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

// config loads the configuration once.
func (a *app) config() (config.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	path := a.configPath
	if path == "" {
		path = config.Locate("")
	}
	cfg, err := config.Load(path)
	if err != nil {
		return config.Config{}, err
	}
	a.cfg = &cfg
	return cfg, nil
}

// open opens the store once, with the config's model and encoding for new threads.
func (a *app) open(ctx context.Context) (*memory.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	path := a.dbPath
	if path == "" {
		path = a.getenv("MEMCTL_DB")
	}
	if path == "" {
		path = "memctl.db"
	}
	s, err := memory.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	s.DefaultModel, s.Encoding = cfg.Model, cfg.Encoding
	a.store = s
	return s, nil
}

// isTerminal reports whether f is an interactive terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
