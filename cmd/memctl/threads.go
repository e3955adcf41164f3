package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

// printJSON writes v as one indented JSON value.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// table writes rows aligned in columns under a header.
type table struct{ w *tabwriter.Writer }

func newTable(w io.Writer, header string) *table {
	t := &table{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.w, header)
	return t
}

// row writes one row; each cell is shown with termLine, so stored text can neither break the
// columns nor reach the terminal as control characters.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = termLine(c)
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}
func (t *table) flush() { t.w.Flush() }

func timeText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

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
			ctx := cmd.Context()
			thread, file := args[0], args[1]
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
			if a.json {
				return a.printJSON(map[string]any{"thread": thread, "imported": res.Appended, "messages": t.Messages, "active_tokens": t.ActiveTokens})
			}
			fmt.Fprintf(a.out, "imported %d messages into %s (%d messages, %d active tokens)\n", res.Appended, termLine(thread), t.Messages, t.ActiveTokens)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts a new thread (default: the config's model)")
	return cmd
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
			if err := threadArg(args[0]); err != nil {
				return err
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			var msgs []memory.Message
			if all {
				h, err := s.History(ctx, args[0])
				if err != nil {
					return err
				}
				for _, e := range h {
					msgs = append(msgs, e.Message)
				}
			} else {
				act, err := s.Active(ctx, args[0])
				if err != nil {
					return err
				}
				msgs = act.Messages()
			}
			if msgs == nil {
				msgs = []memory.Message{}
			}
			return a.printJSON(msgs)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "the full original history instead of the active context")
	return cmd
}

func (a *app) threadsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "threads",
		Short:   "List threads",
		Example: `  memctl threads --json | jq '.[] | select(.active_tokens > 100000) | .id'`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := a.config()
			if err != nil {
				return err
			}
			s, err := a.open(ctx, forReading)
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
			if a.json {
				return a.printJSON(views)
			}
			tw := newTable(a.out, "THREAD\tMODEL\tMESSAGES\tACTIVE\tTOKENS\tLIMIT\tSTRATEGY\tCOMPACTIONS\tUPDATED (UTC)")
			for _, t := range views {
				tw.row(t.ID, t.Model, fmt.Sprint(t.Messages), fmt.Sprint(t.ActiveMessages), fmt.Sprint(t.ActiveTokens),
					fmt.Sprint(t.TokenLimit), t.Strategy, fmt.Sprint(t.Compactions), timeText(t.UpdatedAt))
			}
			tw.flush()
			return nil
		},
	}
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
			s, err := a.open(ctx, forWriting)
			if err != nil {
				return err
			}
			t, err := s.Thread(ctx, args[0])
			if err != nil {
				return err
			}
			if !yes {
				if !isTerminal(a.stdin) {
					return usagef("delete %s: standard input is not a terminal, so nothing can be confirmed: add --yes to delete its %d messages", t.ID, t.Messages)
				}
				fmt.Fprintf(a.errOut, "delete thread %s with %d messages and %d compactions? [y/N] ", termLine(t.ID), t.Messages, t.Compactions)
				a.errOut.Flush()
				line, _ := bufio.NewReader(a.stdin).ReadString('\n')
				if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
					return fmt.Errorf("delete %s: not confirmed; nothing deleted", t.ID)
				}
			}
			if err := s.DeleteThread(ctx, t.ID); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"thread": t.ID, "deleted": true, "messages": t.Messages})
			}
			fmt.Fprintf(a.out, "deleted %s (%d messages)\n", termLine(t.ID), t.Messages)
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	return cmd
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
			ctx := cmd.Context()
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("thread") {
				if err := threadArg(thread); err != nil {
					return fmt.Errorf("--thread: %w", err)
				}
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			if thread != "" {
				if _, err := s.Thread(ctx, thread); err != nil {
					return err
				}
			}
			hits, err := s.Search(ctx, strings.Join(args, " "), memory.SearchOptions{Thread: thread, Limit: limit})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(hits)
			}
			tw := newTable(a.out, "THREAD\tSEQ\tROLE\tSTATE\tSNIPPET")
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
			tw.flush()
			return nil
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "search only this thread")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many results")
	return cmd
}
