package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
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
	var again bool
	cmd := &cobra.Command{
		Use:               "import THREAD FILE",
		ValidArgsFunction: a.completeThreads,
		Short:             "Append messages to a thread (all or nothing)",
		Long: `Append the messages of FILE to THREAD, creating the thread when new. FILE ("-" for stdin)
holds JSONL (one OpenAI chat message per line), a JSON array of messages, or an object
{"messages": [...]}. Every message is checked first; on any error nothing is written.

A FILE whose messages are already the thread's last messages (the same messages in the same
order, as after importing the same file twice) is refused (exit 2) unless --again. A file over
4 MB shows its progress on stderr when stderr is a terminal.`,
		Example: `  memctl import support-42 conversation.jsonl
  cat turn.json | memctl import support-42 - --model gpt-4.1`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.importThread(cmd.Context(), args[0], args[1], model, again)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts a new thread (default: the config's model)")
	cmd.Flags().BoolVar(&again, "again", false, "import even when the file's messages already end the thread")
	return cmd
}

func (a *app) importThread(ctx context.Context, thread, file, model string, again bool) error {
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
	if !again {
		if r, err = a.refuseRepeat(ctx, s, thread, file, r); err != nil {
			return err
		}
	}
	r = a.importProgress(r)
	res, err := s.Import(ctx, thread, bufio.NewReaderSize(r, 1<<20), memory.AppendOptions{Model: model})
	if p, ok := r.(*progressReader); ok {
		p.done()
	}
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

// spoolInput copies r to a private temporary file and returns it rewound. The file is unlinked
// at once where the system allows an open file to be (its data goes with the process);
// elsewhere (Windows) it is removed when memctl closes.
func (a *app) spoolInput(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "memctl-import-*")
	if err != nil {
		return nil, err
	}
	if os.Remove(f.Name()) != nil {
		a.cleanup = append(a.cleanup, func() { f.Close(); os.Remove(f.Name()) })
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// refuseRepeat refuses (exit 2) a file whose messages already end thread, and returns a reader
// of the whole input again: the file rewound, or standard input as read.
func (a *app) refuseRepeat(ctx context.Context, s *memory.Store, thread, file string, r io.Reader) (io.Reader, error) {
	if _, err := s.Thread(ctx, thread); errors.Is(err, memory.ErrThreadNotFound) {
		return r, nil // a new thread: nothing to repeat
	} else if err != nil {
		return nil, err
	}
	f, seekable := r.(*os.File)
	if seekable {
		_, err := f.Seek(0, io.SeekCurrent)
		seekable = err == nil
	}
	if !seekable {
		// Standard input is read twice: spooled to a private temporary file, so the memory an
		// import takes stays bounded by its largest message, not by the input.
		spool, err := a.spoolInput(r)
		if err != nil {
			return nil, usageError{fmt.Errorf("read %s: %w", file, err)}
		}
		r = spool
	}
	repeat, err := s.EndsWith(ctx, thread, r)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	if repeat {
		return nil, usagef("import %s: its messages are already the last messages of thread %s (imported before?); nothing written: add --again to append them once more", file, thread)
	}
	if _, err := r.(io.Seeker).Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("import %s: rewind: %w", file, err)
	}
	return r, nil
}

// progressBytes: a file over this size shows import progress on a terminal.
const progressBytes = 4 << 20

// importProgress wraps r, a file over progressBytes, to show the bytes read on stderr when
// stderr is a terminal; otherwise it returns r.
func (a *app) importProgress(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok || !terminal(a.stderr) {
		return r
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= progressBytes {
		return r
	}
	return &progressReader{r: f, total: st.Size(), w: a.stderr}
}

// progressReader shows on w, one line rewritten in place, how much of total was read.
type progressReader struct {
	r           io.Reader
	w           io.Writer
	read, shown int64
	total       int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read-p.shown >= 1<<20 || (err == io.EOF && p.read != p.shown) {
		p.shown = p.read
		fmt.Fprintf(p.w, "\rmemctl: import: read %s of %s", byteSize(p.read), byteSize(p.total))
	}
	return n, err
}

// done ends the progress line.
func (p *progressReader) done() {
	if p.shown > 0 {
		fmt.Fprintln(p.w)
	}
}

func (a *app) exportCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:               "export THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Print a thread's messages as a JSON array",
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
		Use:   "threads",
		Short: "List threads",
		Long: `List the threads of the database.

Columns: THREAD its id; MODEL the model whose tokenizer counts it; MESSAGES every message
ever appended; ACTIVE the messages of its active context (what the agent sends: summaries
included); TOKENS the tokens of the active context; LIMIT and STRATEGY its effective
token_limit and strategy (the thread's settings, else the config's; with token_limit auto, a
limit marked "auto" is the window memctl serve read from its upstream for the thread's model,
over the calibration ratio: --json has its source in settings.window and token_limit_from);
COMPACTIONS how many
compactions were applied; UPDATED when it last changed (UTC unless --local-time).`,
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
			// With token_limit auto, a thread memctl serve fitted in its upstream's window shows
			// that window's limit (its source is in settings.window).
			auto := cfg.Compaction.TokenLimit == config.WindowAuto
			views := make([]serve.ThreadView, len(ts))
			for i, t := range ts {
				eff := memory.Effective(cfg.Settings(), t.Settings, memory.ThreadSettings{})
				limit, from := serve.LimitFrom(t, cfg.Settings(), auto)
				views[i] = serve.ThreadView{Thread: t, TokenLimit: limit, TokenLimitFrom: from, Strategy: eff.Strategy}
			}
			return a.printTable(views, "THREAD\tMODEL\tMESSAGES\tACTIVE\tTOKENS\tLIMIT\tSTRATEGY\tCOMPACTIONS\tUPDATED ("+a.zone()+")", func(tw *table) {
				for _, t := range views {
					tw.row(t.ID, t.Model, fmt.Sprint(t.Messages), fmt.Sprint(t.ActiveMessages), fmt.Sprint(t.ActiveTokens),
						limitText(t.TokenLimit, t.TokenLimitFrom), t.Strategy, fmt.Sprint(t.Compactions), a.timeText(t.UpdatedAt))
				}
			})
		},
	}
}

// limitText is a thread's limit in the table of threads: "N", or "N auto" when it is the
// window memctl serve read from its upstream.
func limitText(limit int, from string) string {
	if from == serve.LimitFromUpstream {
		return fmt.Sprint(limit, " auto")
	}
	return fmt.Sprint(limit)
}

// showTextBytes is how much of a message's text `show` prints without --full.
const showTextBytes = 600

func (a *app) showCommand() *cobra.Command {
	var all, full bool
	cmd := &cobra.Command{
		Use:               "show THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Print a thread readably",
		Long: `Print the active context of THREAD readably, or with --all its full history, marking the
messages each summary covers and which summaries were superseded or reverted. A message text
or tool-call arguments over 600 bytes are trimmed (the middle left out, with a note); --full
prints them whole.`,
		Example: `  memctl show support-42
  memctl show support-42 --all --full | less`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.storeFor(cmd.Context(), forReading, args[0])
			if err != nil {
				return err
			}
			a.showLimit = showTextBytes
			if full {
				a.showLimit = 0
			}
			if all {
				return a.showHistory(cmd.Context(), s, args[0])
			}
			return a.showActive(cmd.Context(), s, args[0])
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "the full history, with what each summary covers")
	cmd.Flags().BoolVar(&full, "full", false, "print long messages whole instead of trimmed")
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
		writeEntry(a.out, e, pinLabel(e, label), a.showLimit)
	}
	return nil
}

// showHistory prints the whole history of thread, marking what each summary covers.
func (a *app) showHistory(ctx context.Context, s *memory.Store, thread string) error {
	cv, err := s.Coverage(ctx, thread)
	if err != nil {
		return err
	}
	pins, err := s.Pins(ctx, thread)
	if err != nil {
		return err
	}
	for i, e := range cv.Messages {
		cv.Messages[i].Pinned = slices.ContainsFunc(pins, func(p memory.Pinned) bool { return e.Seq >= p.FromSeq && e.Seq <= p.ToSeq })
	}
	if a.json {
		return a.printJSON(showJSON(cv.Messages, cv.Covering))
	}
	fmt.Fprintf(a.out, "thread %s: %d messages, %d summaries\n\n", termLine(thread), len(cv.Messages), len(cv.Covering))
	conversed := false // a message other than the leading system ones was seen
	for _, e := range cv.Messages {
		for _, r := range cv.StartingAt(e.Seq) {
			fmt.Fprintf(a.out, "[compaction %d %s: a summary covers #%d-#%d (%d tokens)]\n\n", *r.ID, r.CoverState(), r.FromSeq, r.ToSeq, r.SummaryTokens)
		}
		label := pinLabel(e, cv.Label(e.Seq))
		if system := e.Message.Role == memory.RoleSystem || e.Message.Role == memory.RoleDeveloper; system && conversed {
			// memctl serve stores a changed system prompt so (the earlier one stays above).
			label = strings.TrimSuffix("system prompt changed; "+label, "; ")
		} else if !system {
			conversed = true
		}
		writeEntry(a.out, e, label, a.showLimit)
	}
	return nil
}

// pinLabel adds "pinned" to the label of a pinned entry, and "recall by the proxy" to that of
// a message memctl serve stored for a recall (see serve.Recall).
func pinLabel(e memory.Entry, label string) string {
	for _, m := range []struct {
		on   bool
		text string
	}{{serve.IsRecall(e.Message), "recall by the proxy"}, {e.Pinned, "pinned"}} {
		switch {
		case !m.on:
		case label == "":
			label = m.text
		default:
			label = m.text + "; " + label
		}
	}
	return label
}

// writeEntry prints e under a head line with label; a text over limit bytes is trimmed (0: never).
func writeEntry(w io.Writer, e memory.Entry, label string, limit int) {
	trim := func(s string) string { return transcript.Trim(s, limit) } // 0: whole
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
		for line := range strings.SplitSeq(trim(text), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	for _, c := range e.Message.ToolCalls {
		fmt.Fprintf(w, "  -> %s %s (id %s)\n", termLine(c.Function.Name), termLine(trim(c.Function.Arguments)), termLine(c.ID))
	}
	fmt.Fprintln(w)
}

// showJSON is the --json form of show: entries with their seq, tokens and summary coverage.
func showJSON(entries []memory.Entry, covering []memory.Report) map[string]any {
	type entry struct {
		Seq          int64          `json:"seq"`
		Tokens       int            `json:"tokens"`
		CompactionID int64          `json:"compaction_id,omitempty"`
		Pinned       bool           `json:"pinned,omitempty"`
		Message      memory.Message `json:"message"`
	}
	out := make([]entry, len(entries))
	for i, e := range entries {
		out[i] = entry{Seq: e.Seq, Tokens: e.Tokens, CompactionID: e.CompactionID, Pinned: e.Pinned, Message: e.Message}
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
		Use:               "delete THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Delete a thread with its history and reports",
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
		Use:               "set THREAD",
		ValidArgsFunction: a.completeThreads,
		Short:             "Store compaction settings on a thread",
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
match; a word ending in * matches the words that start with it (OBUT* finds OBUT9V). Any
other text is a valid query too: it is never read as search syntax.

Columns: THREAD the thread; SEQ the message's place in it ("summary N" for the summary of
compaction N); ROLE the message's role; STATE active (in the active context) or archived
(covered by a summary, left out by a view, or a superseded summary); SNIPPET the text around
the match, the matched words in [brackets] on a terminal (plain text in a pipe; the JSON
snippet always has them).`,
		Example: `  memctl search "reservation ZFA04Y"
  memctl search 'OBUT*'
  memctl search gpt-4o --thread support-42 --limit 5 --json`,
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("thread") {
				if err := threadArg(thread); err != nil {
					return fmt.Errorf("--thread: %w", err)
				}
			}
			query := strings.Join(args, " ")
			if strings.TrimSpace(query) == "" {
				return usagef("search: the query is empty: give one or more words")
			}
			return a.search(cmd.Context(), query, memory.SearchOptions{Thread: thread, Limit: limit})
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "search only this thread")
	cmd.RegisterFlagCompletionFunc("thread", a.completeThreadFlag)
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
	marks := terminal(a.stdout) // [match] brackets on a terminal, plain text in a pipe
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
			snippet := h.Snippet
			if !marks {
				snippet = plainSnippet(h)
			}
			tw.row(h.Thread, where, h.Role, state, oneLine(jsonEscapes.Replace(snippet)))
		}
	})
}

// jsonEscapes turns the escapes of JSON text (a tool call's arguments, a JSON tool result) into
// what they stand for in a table's one-line snippet: a line break shows as one, not as \n.
var jsonEscapes = strings.NewReplacer(`\n`, "\n", `\r`, " ", `\t`, " ", `\"`, `"`, `\\`, `\`)

// plainSnippet is the snippet of h without the brackets around its matches.
func plainSnippet(h memory.SearchHit) string {
	var b strings.Builder
	at := 0
	for _, m := range h.Marks {
		b.WriteString(h.Snippet[at : m[0]-1])
		b.WriteString(h.Snippet[m[0]:m[1]])
		at = m[1] + 1
	}
	b.WriteString(h.Snippet[at:])
	return b.String()
}

// completeThreads completes the THREAD argument (the first) with the thread names of the
// database, opened read-only: completion never creates or migrates one, and offers nothing
// when there is none.
func (a *app) completeThreads(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault // FILE of import
	}
	return a.threadNames(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeThreadFlag completes the value of a --thread flag (see completeThreads).
func (a *app) completeThreadFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.threadNames(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (a *app) threadNames(cmd *cobra.Command, prefix string) []cobra.Completion {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := a.open(ctx, forReading)
	if err != nil {
		return nil
	}
	ts, err := s.Threads(ctx)
	if err != nil {
		return nil
	}
	var names []cobra.Completion
	for _, t := range ts {
		if strings.HasPrefix(t.ID, prefix) {
			names = append(names, t.ID)
		}
	}
	slices.Sort(names)
	return names
}
