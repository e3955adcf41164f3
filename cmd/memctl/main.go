// Command memctl inspects and compacts the conversation memory of LLM agents kept by
// memcascade in one SQLite file or a PostgreSQL database. Its commands, flags, JSON fields and exit codes are a stable
// contract (see README.md and docs/).
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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	prefix := "memctl:"
	if terminal(stderr) && colorAllowed() {
		prefix = "\x1b[" + styleError + "mmemctl:\x1b[0m"
	}
	fmt.Fprintf(stderr, "%s %s\n", prefix, termLine(oneLine(err.Error())))
	return exitCode(err)
}

// exitCode is the exit code of err, from the one table of them: a usage or config error, or
// an error of memory.CodeInvalid, is exitUsage; any other is exitFail.
func exitCode(err error) int {
	var ue usageError
	var ce *config.Error
	switch {
	case errors.As(err, &ue), errors.As(err, &ce):
		return exitUsage
	}
	return exitCodes[memory.ErrorCode(err)]
}

// exitCodes maps memory's error codes to exit codes (docs/memctl.md, "Exit codes").
var exitCodes = map[memory.Code]int{
	memory.CodeInvalid:     exitUsage,
	memory.CodeNotFound:    exitFail,
	memory.CodeConflict:    exitFail,
	memory.CodeOverLimit:   exitFail,
	memory.CodeUnavailable: exitFail,
	memory.CodeInternal:    exitFail,
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memctl",
		Short: "Inspect and compact the conversation memory of LLM agents",
		Long: `memctl reads and writes a memcascade database: one SQLite file, or a PostgreSQL database
(--db postgres://...), holding an agent's conversations as append-only threads, the
compaction reports, the provider cooldowns and the attempt log.`,
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
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		a.out.color = !a.json && terminal(a.stdout) && colorAllowed()
		a.errOut.color = terminal(a.stderr) && colorAllowed()
		return a.newLogger()
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbPath, "db", "", "the SQLite file or postgres:// URL (default $MEMCTL_DB, else $XDG_DATA_HOME/memctl/memctl.db, ~/.local/share/memctl/memctl.db when unset)")
	pf.StringVar(&a.configPath, "config", "", "the config file (default $MEMCTL_CONFIG, else $XDG_CONFIG_HOME/memctl/config.yaml if it exists, else built-in)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")
	pf.BoolVar(&a.localTime, "local-time", false, "show times in the local zone instead of UTC (JSON stays UTC)")
	pf.StringVar(&a.logLevel, "log-level", "warn", "log compactions, attempts and cooldowns to stderr from this level: debug, info, warn or error")
	pf.StringVar(&a.logFormat, "log-format", "text", "log record format: text or json")
	root.AddCommand(
		a.importCommand(), a.exportCommand(), a.threadsCommand(), a.showCommand(), a.deleteCommand(),
		a.tokensCommand(), a.searchCommand(),
		a.compactCommand(), a.setCommand(), a.reportsCommand(), a.reportCommand(), a.revertCommand(),
		a.pinCommand(), a.unpinCommand(),
		a.providersCommand(), a.attemptsCommand(), a.configCommand(), a.versionCommand(),
		a.backupCommand(), a.copyCommand(), a.pruneCommand(), a.vacuumCommand(), a.checkCommand(),
		a.serveCommand(), a.mcpCommand(), a.evalCommand(),
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

// newLogger builds the logger of --log-level and --log-format, writing to stderr.
func (a *app) newLogger() error {
	var level slog.Level
	switch a.logLevel {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return usagef("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	opt := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		// Through errOut: stored text in a record never reaches a terminal as control characters.
		a.logger = slog.New(slog.NewTextHandler(a.errOut, opt))
	case "json":
		a.logger = slog.New(slog.NewJSONHandler(a.stderr, opt))
	default:
		return usagef("--log-format %q: want text or json", a.logFormat)
	}
	return nil
}

// flagError says what a flag value that did not parse should be, where pflag would print
// its parser's error (strconv.ParseInt: parsing "2k": invalid syntax).
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	var want string
	switch ive.GetFlag().Value.Type() {
	case "int", "int64", "uint", "uint64":
		want = "a whole number in digits"
		if strings.ContainsAny(strings.ToLower(ive.GetValue()), "km") {
			want += " (2k may mean 2000 or 2048: write the number)"
		}
	case "float64", "float32":
		want = "a decimal number, such as 0.6"
	case "duration":
		want = "a duration, such as 30s, 5m or 1h"
	case "bool":
		want = "true or false"
	default:
		return err
	}
	return fmt.Errorf("--%s %q: not %s", ive.GetFlag().Name, ive.GetValue(), want)
}
