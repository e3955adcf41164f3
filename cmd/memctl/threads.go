package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// The commands on threads: import, export, threads, show, delete, set, search.

// storeFor checks the thread argument, then opens the store (see open).
func (a *app) storeFor(ctx context.Context, mode openMode, thread string) (*memory.Store, error) {
	if err := threadArg(thread); err != nil {
		return nil, err
	}
	return a.open(ctx, mode)
}

func (a *app) importCommand() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:   "import THREAD FILE",
		Short: "Append messages to a thread (all or nothing)",
		Long: `Append the messages of FILE to THREAD, creating the thread when new. FILE ("-" for stdin)
holds JSONL (one OpenAI chat message per line), a JSON array of messages, or an object
{"messages": [...]}. Every message is checked first; on any error nothing is written.`,
		Example: `  memctl import support-42 conversation.jsonl
  cat turn.json | memctl import support-42 - --model gpt-4.1`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.importThread(cmd.Context(), args[0], args[1], model)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts a new thread (default: the config's model)")
	return cmd
}

func (a *app) importThread(ctx context.Context, thread, file, model string) error {
	if err := threadArg(thread); err != nil {
		return err
	}
	r, closeInput, err := openInput(a.stdin, file)
	if err != nil {
		return err
	}
	defer closeInput()
	s, err := a.open(ctx, forCreating)
	if err != nil {
		return err
	}
	res, err := s.Import(ctx, thread, bufio.NewReaderSize(r, 1<<20), memory.AppendOptions{Model: model})
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	if res.Warning != "" {
		fmt.Fprintf(a.errOut, "memctl: warning: %s\n", res.Warning)
	}
	t, err := s.Thread(ctx, thread)
	if err != nil {
		return err
	}
	return a.printResult(map[string]any{"thread": thread, "imported": res.Appended, "messages": t.Messages, "active_tokens": t.ActiveTokens},
		"imported %d messages into %s (%d messages, %d active tokens)\n", res.Appended, termLine(thread), t.Messages, t.ActiveTokens)
}

func (a *app) exportCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "export THREAD",
		Short: "Print a thread's messages as a JSON array",
		Long: `Print the active context of THREAD (what the agent sends to its model) as a JSON array of
OpenAI chat messages, or with --all the full original history exactly as appended.`,
		Example: `  memctl export support-42 > context.json
  memctl export support-42 --all | jq length`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.storeFor(ctx, forReading, args[0])
			if err != nil {
				return err
			}
			msgs, err := exportMessages(ctx, s, args[0], all)
			if err != nil {
				return err
			}
			return a.printJSON(msgs)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "the full original history instead of the active context")
	return cmd
}

// exportMessages returns the active context of thread, or with all its whole history; never nil.
func exportMessages(ctx context.Context, s *memory.Store, thread string, all bool) ([]memory.Message, error) {
	msgs := []memory.Message{}
	if !all {
		act, err := s.Active(ctx, thread)
		if err != nil {
			return nil, err
		}
		return append(msgs, act.Messages()...), nil
	}
	h, err := s.History(ctx, thread)
	if err != nil {
		return nil, err
	}
	for _, e := range h {
		msgs = append(msgs, e.Message)
	}
	return msgs, nil
}

func (a *app) threadsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "threads",
		Short:   "List threads",
		Example: `  memctl threads --json | jq '.[] | select(.active_tokens > 100000) | .id'`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, cfg, err := a.openWithConfig(ctx, forReading)
			if err != nil {
				return err
			}
			ts, err := s.Threads(ctx)
			if err != nil {
				return err
			}
			// Each thread with its effective token_limit and strategy: the thread's, else the
			// config's.
			type threadView struct {
				memory.Thread
				TokenLimit int    `json:"token_limit"`
				Strategy   string `json:"strategy"`
			}
			views := make([]threadView, len(ts))
			for i, t := range ts {
				eff := memory.Effective(cfg.Settings(), t.Settings, memory.ThreadSettings{})
				views[i] = threadView{Thread: t, TokenLimit: eff.TokenLimit, Strategy: eff.Strategy}
			}
			return a.printTable(views, "THREAD\tMODEL\tMESSAGES\tACTIVE\tTOKENS\tLIMIT\tSTRATEGY\tCOMPACTIONS\tUPDATED (UTC)", func(tw *table) {
				for _, t := range views {
					tw.row(t.ID, t.Model, fmt.Sprint(t.Messages), fmt.Sprint(t.ActiveMessages), fmt.Sprint(t.ActiveTokens),
						fmt.Sprint(t.TokenLimit), t.Strategy, fmt.Sprint(t.Compactions), timeText(t.UpdatedAt))
				}
			})
		},
	}
}

// showTextBytes is how much of a message's text `show` prints.
const showTextBytes = 600

func (a *app) showCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "show THREAD",
		Short: "Print a thread readably",
		Long: `Print the active context of THREAD readably, or with --all its full history, marking the
messages each summary covers and which summaries were superseded or reverted.`,
		Example: `  memctl show support-42
  memctl show support-42 --all | less`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.storeFor(cmd.Context(), forReading, args[0])
			if err != nil {
				return err
			}
			if all {
				return a.showHistory(cmd.Context(), s, args[0])
			}
			return a.showActive(cmd.Context(), s, args[0])
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "the full history, with what each summary covers")
	return cmd
}

// showActive prints the active context of thread.
func (a *app) showActive(ctx context.Context, s *memory.Store, thread string) error {
	act, err := s.Active(ctx, thread)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(showJSON(act.Entries, nil))
	}
	fmt.Fprintf(a.out, "thread %s  model %s  %d messages active, %d tokens\n\n", termLine(act.Thread.ID), termLine(act.Thread.Model), len(act.Entries), act.Tokens)
	for _, e := range act.Entries {
		label := ""
		if e.CompactionID != 0 {
			label = fmt.Sprintf("summary of compaction %d, covers #%d-#%d", e.CompactionID, e.CoversFrom, e.CoversTo)
		}
		writeEntry(a.out, e, label)
	}
	return nil
}

// showHistory prints the whole history of thread, marking what each summary covers.
func (a *app) showHistory(ctx context.Context, s *memory.Store, thread string) error {
	hist, err := s.History(ctx, thread)
	if err != nil {
		return err
	}
	reps, err := s.Reports(ctx, thread, 1<<20)
	if err != nil {
		return err
	}
	var covering []memory.Report // applied or reverted, oldest first
	for i := len(reps) - 1; i >= 0; i-- {
		if r := reps[i]; r.Status == memory.StatusApplied || r.Status == memory.StatusReverted {
			covering = append(covering, r)
		}
	}
	if a.json {
		return a.printJSON(showJSON(hist, covering))
	}
	var current *memory.Report
	for i := range covering {
		if covering[i].Status == memory.StatusApplied && !covering[i].Superseded {
			current = &covering[i]
		}
	}
	fmt.Fprintf(a.out, "thread %s: %d messages, %d summaries\n\n", termLine(thread), len(hist), len(covering))
	for _, e := range hist {
		for _, r := range covering {
			if r.FromSeq == e.Seq {
				fmt.Fprintf(a.out, "[compaction %d %s: a summary covers #%d-#%d (%d tokens)]\n\n", *r.ID, coverState(r), r.FromSeq, r.ToSeq, r.SummaryTokens)
			}
		}
		writeEntry(a.out, e, historyLabel(current, e.Seq))
	}
	return nil
}

// historyLabel says what the current compaction does to message seq: archived (covered by its
// summary), or what its view (mask, window, fit) does.
func historyLabel(current *memory.Report, seq int64) string {
	if l := viewLabel(current, seq); l != "" {
		return l
	}
	if current != nil && seq >= current.FromSeq && seq <= current.ToSeq {
		return fmt.Sprintf("archived: covered by compaction %d", *current.ID)
	}
	return ""
}

// viewLabel says what the current compaction's view (mask, window, fit) does to message seq.
func viewLabel(current *memory.Report, seq int64) string {
	if current == nil || current.View == nil {
		return ""
	}
	v := current.View
	switch {
	case slices.Contains(v.Masked, seq):
		return fmt.Sprintf("masked by compaction %d (%s): a placeholder in the active context", *current.ID, current.Strategy)
	case slices.Contains(v.Cut, seq):
		return fmt.Sprintf("cut by compaction %d (%s): shortened in the active context", *current.ID, current.Strategy)
	case slices.ContainsFunc(v.Omitted, func(r memory.SeqRange) bool { return seq >= r[0] && seq <= r[1] }):
		return fmt.Sprintf("left out of the active context by compaction %d (%s)", *current.ID, current.Strategy)
	}
	return ""
}

func coverState(r memory.Report) string {
	switch {
	case r.Status == memory.StatusReverted:
		return "reverted"
	case r.Superseded:
		return "superseded"
	}
	return "current"
}

func writeEntry(w io.Writer, e memory.Entry, label string) {
	head := fmt.Sprintf("#%d %s", e.Seq, e.Message.Role)
	if e.CompactionID != 0 {
		head = e.Message.Role + " (summary)"
	}
	if e.Message.Name != "" {
		head += " name=" + termLine(e.Message.Name)
	}
	if e.Message.ToolCallID != "" {
		head += " answers " + termLine(e.Message.ToolCallID)
	}
	head += fmt.Sprintf("  %d tokens", e.Tokens)
	if label != "" {
		head += "  [" + label + "]"
	}
	fmt.Fprintln(w, head)
	if text := e.Message.Text(); text != "" {
		for line := range strings.SplitSeq(transcript.Trim(text, showTextBytes), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	for _, c := range e.Message.ToolCalls {
		fmt.Fprintf(w, "  -> %s %s (id %s)\n", termLine(c.Function.Name), termLine(transcript.Trim(c.Function.Arguments, showTextBytes)), termLine(c.ID))
	}
	fmt.Fprintln(w)
}

// showJSON is the --json form of show: entries with their seq, tokens and summary coverage.
func showJSON(entries []memory.Entry, covering []memory.Report) map[string]any {
	type entry struct {
		Seq          int64          `json:"seq"`
		Tokens       int            `json:"tokens"`
		CompactionID int64          `json:"compaction_id,omitempty"`
		Message      memory.Message `json:"message"`
	}
	out := make([]entry, len(entries))
	for i, e := range entries {
		out[i] = entry{Seq: e.Seq, Tokens: e.Tokens, CompactionID: e.CompactionID, Message: e.Message}
	}
	m := map[string]any{"messages": out}
	if covering != nil {
		m["summaries"] = covering
	}
	return m
}

func (a *app) deleteCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete THREAD",
		Short: "Delete a thread with its history and reports",
		Long: `Delete THREAD with its whole history, its compaction reports and their attempt log. On a
terminal memctl asks first; otherwise --yes is required.`,
		Example: `  memctl delete support-42 --yes`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := threadArg(args[0]); err != nil {
				return err
			}
			s, t, err := a.openThread(ctx, forWriting, args[0])
			if err != nil {
				return err
			}
			if !yes {
				if err := a.confirmDelete(t); err != nil {
					return err
				}
			}
			if err := s.DeleteThread(ctx, t.ID); err != nil {
				return err
			}
			return a.printResult(map[string]any{"thread": t.ID, "deleted": true, "messages": t.Messages},
				"deleted %s (%d messages)\n", termLine(t.ID), t.Messages)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	return cmd
}

// confirmDelete asks on the terminal whether to delete t; without one, nothing can be confirmed.
func (a *app) confirmDelete(t memory.Thread) error {
	if !isTerminal(a.stdin) {
		return usagef("delete %s: standard input is not a terminal, so nothing can be confirmed: add --yes to delete its %d messages", t.ID, t.Messages)
	}
	fmt.Fprintf(a.errOut, "delete thread %s with %d messages and %d compactions? [y/N] ", termLine(t.ID), t.Messages, t.Compactions)
	a.errOut.Flush()
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return fmt.Errorf("delete %s: not confirmed; nothing deleted", t.ID)
	}
	return nil
}

func (a *app) setCommand() *cobra.Command {
	var unset []string
	cmd := &cobra.Command{
		Use:   "set THREAD",
		Short: "Store compaction settings on a thread",
		Long: `Store compaction settings on THREAD; the settings not named keep their stored value, and
--unset KEY (token_limit, target_ratio, trigger_ratio, reserve_tokens, strategy, model) clears
one. Every compaction of the thread uses them: a flag of compact wins over them, and they win
over the config file, which wins over the built-in defaults. Without a flag, prints the
thread's settings.`,
		Example: `  memctl set support-42 --limit 8000 --reserve 1000
  memctl set support-42 --unset token_limit --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.setThread(cmd, args[0], unset)
		},
	}
	f := cmd.Flags()
	addSettingFlags(f, "token_limit: the model's context window")
	f.Int("reserve", 0, "reserve_tokens: held back for tool definitions and the reply")
	f.String("strategy", "", "strategy: how the thread is compacted (summarize)")
	f.String("model", "", "model: the model the thread runs against")
	f.StringArrayVar(&unset, "unset", nil, "clear a setting (token_limit, target_ratio, trigger_ratio, reserve_tokens, strategy, model); repeatable")
	return cmd
}

// setThread stores on thread the settings the flags of cmd give, without those unset names,
// and prints the thread's settings; with neither, it only prints them.
func (a *app) setThread(cmd *cobra.Command, thread string, unset []string) error {
	ctx := cmd.Context()
	if err := threadArg(thread); err != nil {
		return err
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	given, err := settingsFromFlags(cmd)
	if err != nil {
		return err
	}
	if err := checkUnset(cmd, unset); err != nil {
		return err
	}
	mode := forWriting
	if given.IsZero() && len(unset) == 0 {
		mode = forReading
	}
	s, t, err := a.openThread(ctx, mode, thread)
	if err != nil {
		return err
	}
	ts := t.Settings
	if mode == forWriting {
		for _, key := range unset {
			ts.Unset(key) // checked by checkUnset
		}
		ts = ts.Over(given)
		prefix := "set " + t.ID
		if err := ts.Validate(); err != nil {
			return settingsError(cmd, prefix, err)
		}
		if err := memory.Effective(cfg.Settings(), ts, memory.ThreadSettings{}).Validate(); err != nil {
			return settingsError(cmd, prefix+" (with the config)", err)
		}
		if err := s.SetThreadSettings(ctx, t.ID, ts); err != nil {
			return err
		}
	}
	return a.printSettings(t.ID, ts, memory.Effective(cfg.Settings(), ts, memory.ThreadSettings{}))
}

// checkUnset refuses an --unset KEY that names no setting, or one a flag of cmd sets too.
func checkUnset(cmd *cobra.Command, unset []string) error {
	for _, key := range unset {
		var probe memory.ThreadSettings
		if err := probe.Unset(key); err != nil {
			return usagef("--unset %s: %v", key, err)
		}
		if name := settingFlags[key]; cmd.Flags().Changed(name) {
			return usagef("--unset %s: --%s sets it in the same command", key, name)
		}
	}
	return nil
}

// printSettings prints the settings stored on a thread and the effective ones.
func (a *app) printSettings(thread string, stored memory.ThreadSettings, eff memory.Settings) error {
	if a.json {
		return a.printJSON(map[string]any{
			"thread": thread, "settings": stored,
			"effective": map[string]any{
				memory.KeyTokenLimit: eff.TokenLimit, memory.KeyTargetRatio: eff.TargetRatio, memory.KeyTriggerRatio: eff.TriggerRatio,
				memory.KeyReserveTokens: eff.ReserveTokens, memory.KeyStrategy: eff.Strategy,
			},
		})
	}
	fmt.Fprintf(a.out, "settings of %s (effective; from the thread or the config):\n", termLine(thread))
	tw := newTable(a.out, "  KEY\tVALUE\tFROM")
	from := func(set bool) string {
		if set {
			return "thread"
		}
		return "config"
	}
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	tw.row("  "+memory.KeyTokenLimit, fmt.Sprint(eff.TokenLimit), from(stored.TokenLimit != nil))
	tw.row("  "+memory.KeyTargetRatio, ratio(eff.TargetRatio), from(stored.TargetRatio != nil))
	tw.row("  "+memory.KeyTriggerRatio, ratio(eff.TriggerRatio), from(stored.TriggerRatio != nil))
	tw.row("  "+memory.KeyReserveTokens, fmt.Sprint(eff.ReserveTokens), from(stored.ReserveTokens != nil))
	tw.row("  "+memory.KeyStrategy, eff.Strategy, from(stored.Strategy != ""))
	if stored.Model != "" {
		tw.row("  "+memory.KeyModel, stored.Model, "thread")
	}
	tw.flush()
	return nil
}

func (a *app) searchCommand() *cobra.Command {
	var thread string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over every stored message and summary",
		Long: `Search every stored message and summary, archived ones included. Each word of QUERY must
match; any text is a valid query (it is never read as search syntax).`,
		Example: `  memctl search "reservation ZFA04Y"
  memctl search gpt-4o --thread support-42 --limit 5 --json`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("thread") {
				if err := threadArg(thread); err != nil {
					return fmt.Errorf("--thread: %w", err)
				}
			}
			return a.search(cmd.Context(), strings.Join(args, " "), memory.SearchOptions{Thread: thread, Limit: limit})
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "search only this thread")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many results")
	return cmd
}

// search prints the hits of query (an unknown opt.Thread is exit 1).
func (a *app) search(ctx context.Context, query string, opt memory.SearchOptions) error {
	s, err := a.open(ctx, forReading)
	if err != nil {
		return err
	}
	if opt.Thread != "" {
		if _, err := s.Thread(ctx, opt.Thread); err != nil {
			return err
		}
	}
	hits, err := s.Search(ctx, query, opt)
	if err != nil {
		return err
	}
	return a.printTable(hits, "THREAD\tSEQ\tROLE\tSTATE\tSNIPPET", func(tw *table) {
		for _, h := range hits {
			where := fmt.Sprint(h.Seq)
			if h.CompactionID != 0 {
				where = fmt.Sprintf("summary %d", h.CompactionID)
			}
			state := "active"
			if h.Archived {
				state = "archived"
			}
			tw.row(h.Thread, where, h.Role, state, oneLine(h.Snippet))
		}
	})
}
