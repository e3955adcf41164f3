package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

func (a *app) compactCommand() *cobra.Command {
	var force, dryRun bool
	cmd := &cobra.Command{
		Use:               "compact THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Compact a thread's active context",
		Long: `Compact THREAD: keep its system prompt and its most recent messages up to limit x ratio,
and replace the middle with a summary written by the configured cascade of providers. The
originals are never lost; if no provider can summarize, nothing changes (exit 1). Without
--force a thread under limit x trigger is left alone (not_needed). --dry-run prints the plan.`,
		Example: `  memctl compact support-42
  memctl compact support-42 --limit 8000 --force --json
  memctl compact support-42 --dry-run`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.compact(cmd, args[0], force, dryRun)
		},
	}
	f := cmd.Flags()
	addSettingFlags(f, "token_limit: the model's context window (default: the thread's, else the config's)")
	f.BoolVar(&force, "force", false, "compact even under the trigger")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan; call no provider, write nothing")
	return cmd
}

// compact compacts thread with the settings the flags of cmd override, and prints the report.
func (a *app) compact(cmd *cobra.Command, thread string, force, dryRun bool) error {
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
	s, t, err := a.openThread(ctx, writeMode(dryRun), thread)
	if err != nil {
		return err
	}
	// The flags win over the thread's settings, which win over the config's.
	if err := memory.Effective(cfg.Settings(), t.Settings, over).Validate(); err != nil {
		return settingsError(cmd, "compact", err)
	}
	counter, err := s.Counter(t.Encoding)
	if err != nil {
		return err
	}
	c, casc, err := a.newCompactor(s, counter.CountText, a.logger)
	if err != nil {
		return err
	}
	a.showProgress(c, casc)
	rep, err := c.Compact(ctx, t.ID, memory.CompactOptions{Force: force, DryRun: dryRun, Override: over})
	if rep.Status == "" { // no report: the thread could not be read
		return err
	}
	if perr := a.printReport(rep); perr != nil && err == nil {
		err = perr
	}
	return err
}

// showProgress sends the progress of a compaction to stderr when it is a terminal; a warning
// (a window the server did not report) is printed wherever stderr goes.
func (a *app) showProgress(c *memory.Compactor, casc *cascade.Cascade) {
	terminal := isTerminal(a.stderr)
	casc.Observe = func(e cascade.Event) {
		if !terminal && !e.Warning {
			return
		}
		if text := eventText(e); text != "" {
			fmt.Fprintf(a.errOut, "memctl: %s\n", text)
		}
	}
	if terminal {
		c.Progress = func(p memory.Progress) {
			fmt.Fprintf(a.errOut, "memctl: pass %d: %s: summarizing chunk %d of %d\n", p.Pass, p.Provider, p.Chunk, p.Chunks)
		}
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

// usageText describes a compaction's usage: "3 requests, 5230 prompt + 410 completion
// tokens", with "(estimated: ...)" when some were counted locally.
func usageText(u memory.Usage) string {
	s := fmt.Sprintf("%s, %d prompt + %d completion tokens", english.Count(u.Requests, "request", "requests"), u.PromptTokens, u.CompletionTokens)
	if u.Estimated {
		s += " (estimated: a server sent no usage, counted locally)"
	}
	return s
}

func (a *app) printReport(r memory.Report) error {
	if a.json {
		return a.printJSON(r)
	}
	writeReport(a.out, r)
	return nil
}

func writeReport(w io.Writer, r memory.Report) {
	id := "-"
	if r.ID != nil {
		id = strconv.FormatInt(*r.ID, 10)
	}
	fmt.Fprintf(w, "compaction %s on thread %s: ", id, r.Thread)
	paint(w, statusStyle(r.Status), r.Status)
	fmt.Fprintf(w, " (%s)\n", r.Reason)
	if r.Detail != "" {
		fmt.Fprintf(w, "  %s\n", r.Detail)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "  tokens    %d -> %d (limit %d)%s\n", r.TokensBefore, r.TokensAfter, r.TokenLimit,
		appendedText(r.TokensAppended, r.MessagesAppended, r.TokensAfter))
	fmt.Fprintf(w, "  messages  %d -> %d: %s", r.MessagesBefore, r.MessagesAfter, summarizedText(r))
	if r.FromSeq > 0 && r.SummarizedMessages > 0 {
		fmt.Fprintf(w, " (#%d-#%d)", r.FromSeq, r.ToSeq)
	}
	fmt.Fprintf(w, ", %d kept\n", r.KeptMessages)
	if r.Provider != "" {
		fmt.Fprintf(w, "  summary   %d tokens by %s (%s), %s, %s, %d ms\n", r.SummaryTokens, r.Provider, r.Model,
			english.Count(r.Passes, "pass", "passes"), english.Count(r.Chunks, "chunk", "chunks"), r.DurationMs)
	}
	if r.Requests > 0 {
		fmt.Fprintf(w, "  requests  %s to providers\n", english.Count(r.Requests, "request", "requests"))
	}
	if u := r.Usage; u.Requests > 0 {
		fmt.Fprintf(w, "  usage     %s\n", usageText(u))
	}
	if r.FactsTotal > 0 {
		why := "no room within the limit"
		if r.Strategy == memory.StrategyMask || r.Strategy == memory.StrategyWindow {
			fmt.Fprintf(w, "  facts     %d in what was masked, cut or left out, %d still in the view; ", r.FactsTotal, r.FactsKept)
			why = "not in the active context"
		} else {
			fmt.Fprintf(w, "  facts     %d in what was summarized, %d in the provider's summary; ", r.FactsTotal, r.FactsKept)
		}
		if len(r.FactsDropped) == 0 {
			fmt.Fprintln(w, "every one is in the active context")
		} else {
			fmt.Fprintf(w, "%d left out (%s): %s\n", len(r.FactsDropped), why, strings.Join(r.FactsDropped, "; "))
		}
	}
	if r.Superseded {
		fmt.Fprintln(w, "  superseded by a later compaction of the thread")
	}
	if len(r.Attempts) > 0 {
		fmt.Fprintln(w, "  attempts:")
		tw := newTable(w, "    PROVIDER\tMODEL\tOUTCOME\tHTTP\tCLASS\tMS\tERROR")
		for _, at := range r.Attempts {
			tw.row("    "+at.Provider, at.Model, at.Outcome, fmt.Sprint(at.HTTPStatus), at.ErrorClass, fmt.Sprint(at.DurationMs), oneLine(at.Error))
		}
		tw.flush()
	}
	if r.Summary != nil && *r.Summary != "" {
		fmt.Fprintln(w, "  summary:")
		for line := range strings.SplitSeq(*r.Summary, "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
}

// appendedText says what was appended while a compaction ran, after its tokens line: "; then
// 2 messages (57 tokens) appended while it ran: 1540 now". "" when none was.
func appendedText(tokens, messages, after int) string {
	if tokens == 0 && messages == 0 {
		return ""
	}
	return fmt.Sprintf("; then %s (%d tokens) appended while it ran: %d now",
		english.Count(messages, "message", "messages"), tokens, after+tokens)
}

// summarizedText says how many messages a compaction summarized: "24 summarized", or, for one
// that applied nothing, "none summarized".
func summarizedText(r memory.Report) string {
	if r.SummarizedMessages == 0 {
		return "none summarized"
	}
	return fmt.Sprintf("%d summarized", r.SummarizedMessages)
}

func (a *app) reportsCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:               "reports [THREAD]",
		ValidArgsFunction: a.completeThreads,
		Short:             "List compaction reports, newest first",
		Long: `List the compaction reports of every thread, or of THREAD, newest first: applied, failed,
ineffective and reverted ones alike.

Columns: ID the compaction; THREAD its thread; STATUS applied, failed, ineffective or
reverted ("(superseded)": a later compaction folded it in); REASON why it ran (threshold,
emergency, forced); TOKENS and MESSAGES the active context before -> after ("(+N)": appended
while it ran, beside what it made); PROVIDER who wrote
the summary; REQUESTS the requests to providers; PROMPT+COMPLETION the tokens they used ("~":
counted locally where a server sent no usage); CREATED when it ran (UTC unless --local-time);
ERROR why it failed.`,
		Example: "  memctl reports\n  memctl reports support-42 --json",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			thread := ""
			if len(args) == 1 {
				thread = args[0]
				if err := threadArg(thread); err != nil {
					return err
				}
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			reps, err := s.Reports(ctx, thread, limit)
			if err != nil {
				return err
			}
			return a.printTable(reps, "ID\tTHREAD\tSTATUS\tREASON\tTOKENS\tMESSAGES\tPROVIDER\tREQUESTS\tPROMPT+COMPLETION\tCREATED ("+a.zone()+")\tERROR", func(tw *table) {
				for _, r := range reps {
					a.reportRow(tw, r)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many reports")
	return cmd
}

// reportRow is the row of r in the table of reports.
func (a *app) reportRow(tw *table, r memory.Report) {
	status := r.Status
	if r.Superseded {
		status += " (superseded)"
	}
	cost := fmt.Sprintf("%d+%d", r.Usage.PromptTokens, r.Usage.CompletionTokens)
	if r.Usage.Estimated {
		cost = "~" + cost // counted locally
	}
	tw.row(fmt.Sprint(*r.ID), r.Thread, status, r.Reason, beforeAfter(r.TokensBefore, r.TokensAfter, r.TokensAppended),
		beforeAfter(r.MessagesBefore, r.MessagesAfter, r.MessagesAppended), r.Provider, fmt.Sprint(r.Usage.Requests), cost,
		a.timeText(r.CreatedAt), oneLine(r.Error))
}

// beforeAfter is a cell of the table of reports: "4544 -> 3013", with "(+57)" for what was
// appended while the compaction ran.
func beforeAfter(before, after, appended int) string {
	if appended == 0 {
		return fmt.Sprintf("%d -> %d", before, after)
	}
	return fmt.Sprintf("%d -> %d (+%d)", before, after, appended)
}

func (a *app) reportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "report ID",
		Short: "Show one compaction report with its attempts and summary",
		Long: `Show compaction ID: its status and reason, the tokens and messages of the active context
before -> after (and the thread's limit; messages appended while it ran are shown apart), the
messages summarized (#first-#last; none for one that applied nothing) and kept, the
summary's size and author, the requests and tokens spent, the facts (ids, paths, numbers) of
what was summarized and whether each reached the active context, every attempt, and the
summary text.

Columns of the attempts: PROVIDER and MODEL who was asked;
OUTCOME ok, error, skipped_cooldown (the provider was cooling down), skipped_window (the
input does not fit its context window) or skipped_budget (no time left); HTTP the status code
(0: no response); CLASS the kind of error (timeout, network, rate_limited, server, auth,
bad_request, context_length, bad_response, canceled); MS how long it took in milliseconds;
ERROR the error, keys and secrets redacted.`,
		Example: "  memctl report 7\n  memctl report 7 --json | jq .summary",
		Args:    args(cobra.ExactArgs(1)),
		RunE:    a.withReport(forReading, (*memory.Store).Report),
	}
}

func (a *app) revertCommand() *cobra.Command {
	var byThread bool
	cmd := &cobra.Command{
		Use:   "revert ID|THREAD",
		Short: "Undo the latest applied compaction of a thread",
		Long: `Undo the latest applied compaction of a thread: the messages it covered are active again,
with everything appended since. The argument is a compaction id (a positive integer), which must
be the latest applied compaction of its thread (reverting an older one is refused, exit 1), or
a thread id, whose latest applied compaction is reverted (a thread with none: exit 1). With
--thread the argument is always a thread id (for a thread whose id is a positive integer).`,
		Example: "  memctl revert 7\n  memctl revert support-42\n  memctl revert --thread 42",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.open(cmd.Context(), forWriting)
			if err != nil {
				return err
			}
			var r memory.Report
			if id, perr := strconv.ParseInt(args[0], 10, 64); perr == nil && id > 0 && !byThread {
				r, err = s.Revert(cmd.Context(), id)
			} else {
				r, err = s.RevertThread(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			return a.printReport(r)
		},
	}
	cmd.Flags().BoolVar(&byThread, "thread", false, "the argument is a thread id, even when it is a number")
	return cmd
}

// withReport runs a command that does op on the compaction named by its argument and prints
// the report.
func (a *app) withReport(mode openMode, op func(*memory.Store, context.Context, int64) (memory.Report, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := compactionID(args[0])
		if err != nil {
			return err
		}
		s, err := a.open(cmd.Context(), mode)
		if err != nil {
			return err
		}
		r, err := op(s, cmd.Context(), id)
		if err != nil {
			return err
		}
		return a.printReport(r)
	}
}

func compactionID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("%q is not a compaction id (a positive integer)", s)
	}
	return id, nil
}
