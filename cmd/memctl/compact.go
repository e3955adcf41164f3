package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
)

func (a *app) compactCommand() *cobra.Command {
	var force, dryRun bool
	var instructions string
	cmd := &cobra.Command{
		Use:               "compact THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Compact a thread's active context",
		Long: `Compact THREAD: keep its system prompt and its most recent messages up to limit x ratio,
and replace the middle with a summary written by the thread's cascade of providers (the config's
compaction.cascade, or the thread's memctl set --cascade; with a part cascade, it reads the
middle in parts first). The
originals are never lost; if no provider can summarize, nothing changes (exit 1). Without
--force a thread under limit x trigger is left alone (not_needed). --dry-run prints the plan.
--instructions adds what the summary should keep or stress to this compaction's prompt (redacted,
after the transcript). --strategy compacts this once by another strategy than the thread's
(memctl set THREAD --strategy keeps one). After compaction.max_failures failed compactions in a row the thread is
held (status held, exit 1, no provider asked) until its context doubles, its limit, reserve or
ratios change, or --force.`,
		Example: `  memctl compact support-42
  memctl compact support-42 --limit 8000 --force --json
  memctl compact support-42 --dry-run
  memctl compact support-42 --force --strategy queue
  memctl compact support-42 --force --instructions "keep the refund amounts and the ticket ids"`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.compact(cmd, args[0], compact.Options{Force: force, DryRun: dryRun, Instructions: instructions})
		},
	}
	f := cmd.Flags()
	addSettingFlags(f, "token_limit: the model's context window (default: the thread's, else the config's)")
	f.String("strategy", "", "strategy of this compaction: summarize, mask, hybrid, window or queue (default: the thread's, else the config's)")
	f.BoolVar(&force, "force", false, "compact even under the trigger")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan; call no provider, write nothing")
	f.StringVar(&instructions, "instructions", "", "instructions for this compaction's summary, added to its prompt (redacted)")
	return cmd
}

// compact compacts thread with the settings the flags of cmd override, and prints the report.
func (a *app) compact(cmd *cobra.Command, thread string, opt compact.Options) error {
	ctx := cmd.Context()
	cfg, err := a.config()
	if err != nil {
		return err
	}
	if err := threadArg(thread); err != nil {
		return err
	}
	// A flag given is checked as given: 0 is not "the default", NaN is not a ratio.
	over, err := settingsFromFlags(cmd)
	if err != nil {
		return err
	}
	s, t, err := a.openThread(ctx, writeMode(opt.DryRun), thread)
	if err != nil {
		return err
	}
	// The flags win over the thread's settings, which win over the config's.
	ts, err := compact.SettingsOf(t)
	if err != nil {
		return err
	}
	eff, err := compact.Resolve(cfg.Settings(), ts, over)
	if err != nil {
		return settingsError(cmd, "compact", err)
	}
	if err := unknownCascade(cmd, "compact "+t.ID, cfg, eff); err != nil {
		return err
	}
	counter, err := s.Counter(t.Encoding)
	if err != nil {
		return err
	}
	c, _, err := a.newCompactor(cascade.Options{Count: counter.CountText, Logger: a.logger, Observe: a.observer()},
		compact.Config{Logger: a.logger, Progress: a.progress()})
	if err != nil {
		return err
	}
	opt.Override = over
	rep, err := c.Compact(ctx, t.ID, opt)
	if rep.Status == "" { // no report: the thread could not be read
		return err
	}
	if perr := a.printReport(rep); perr != nil && err == nil {
		err = perr
	}
	return err
}

// observer sends the events of a compaction's cascade to stderr when it is a terminal; a
// warning (a window the server did not report) is printed wherever stderr goes.
func (a *app) observer() func(cascade.Event) {
	terminal := isTerminal(a.stderr)
	return func(e cascade.Event) {
		if !terminal && !e.Warning {
			return
		}
		if text := eventText(e); text != "" {
			fmt.Fprintf(a.errOut, "memctl: %s\n", text)
		}
	}
}

// progress sends the progress of a compaction to stderr when it is a terminal (nil: it is not).
func (a *app) progress() func(compact.Progress) {
	if !isTerminal(a.stderr) {
		return nil
	}
	return func(p compact.Progress) {
		fmt.Fprintf(a.errOut, "memctl: pass %d: %s: summarizing chunk %d of %d\n", p.Pass, p.Provider, p.Chunk, p.Chunks)
	}
}

// eventText describes a cascade event for a person.
func eventText(e cascade.Event) string {
	s := e.Provider + ": " + string(e.Kind)
	switch e.Kind {
	case cascade.EventTry:
		s = fmt.Sprintf("%s: trying (attempt %d)", e.Provider, e.Attempt)
	case cascade.EventSkip:
		s = fmt.Sprintf("%s: cooling down, skipped", e.Provider)
	case cascade.EventSkipWindow:
		s = fmt.Sprintf("%s: skipped, the input does not fit its context window", e.Provider)
	case cascade.EventSkipBudget:
		s = fmt.Sprintf("%s: skipped, no time left for it", e.Provider)
	case cascade.EventSkipCost:
		s = fmt.Sprintf("%s: skipped, its estimated cost is over max_cost", e.Provider)
	case cascade.EventWait:
		return "" // a retry event already said how long it waits
	case cascade.EventRetry:
		s = fmt.Sprintf("%s: %s, retry in %s", e.Provider, e.Class, e.Wait.Round(time.Millisecond))
	case cascade.EventFail:
		s = fmt.Sprintf("%s: failed (%s)", e.Provider, e.Class)
	case cascade.EventOK:
		s = fmt.Sprintf("%s: ok", e.Provider)
	case cascade.EventWindow:
		s = fmt.Sprintf("%s: context window %d tokens", e.Provider, e.Window)
		if e.Warning {
			s = fmt.Sprintf("%s: warning", e.Provider)
		}
	}
	if e.Err != "" {
		s += ": " + e.Err
	}
	return s
}
