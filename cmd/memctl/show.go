package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/transcript"
)

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
	cv, err := readCoverage(ctx, s, thread)
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
		for _, r := range cv.startingAt(e.Seq) {
			fmt.Fprintf(a.out, "[compaction %d %s: a summary covers #%d-#%d (%d tokens)]\n\n", r.ID, coverState(r), r.FromSeq, r.ToSeq, r.SummaryTokens)
		}
		label := pinLabel(e, cv.label(e.Seq))
		if system := e.Message.Role == chat.RoleSystem || e.Message.Role == chat.RoleDeveloper; system && conversed {
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
		Seq          int64        `json:"seq"`
		Tokens       int          `json:"tokens"`
		CompactionID int64        `json:"compaction_id,omitempty"`
		Pinned       bool         `json:"pinned,omitempty"`
		Message      chat.Message `json:"message"`
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
