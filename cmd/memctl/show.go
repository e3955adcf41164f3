package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

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
			ctx := cmd.Context()
			if err := threadArg(args[0]); err != nil {
				return err
			}
			s, err := a.open(ctx, forReading)
			if err != nil {
				return err
			}
			if !all {
				act, err := s.Active(ctx, args[0])
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
			hist, err := s.History(ctx, args[0])
			if err != nil {
				return err
			}
			reps, err := s.Reports(ctx, args[0], 1<<20)
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
			fmt.Fprintf(a.out, "thread %s: %d messages, %d summaries\n\n", termLine(args[0]), len(hist), len(covering))
			for _, e := range hist {
				for _, r := range covering {
					if r.FromSeq == e.Seq {
						fmt.Fprintf(a.out, "[compaction %d %s: a summary covers #%d-#%d (%d tokens)]\n\n", *r.ID, coverState(r), r.FromSeq, r.ToSeq, r.SummaryTokens)
					}
				}
				label := ""
				if current != nil && e.Seq >= current.FromSeq && e.Seq <= current.ToSeq {
					label = fmt.Sprintf("archived: covered by compaction %d", *current.ID)
				}
				if l := viewLabel(current, e.Seq); l != "" {
					label = l
				}
				writeEntry(a.out, e, label)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "the full history, with what each summary covers")
	return cmd
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

func (a *app) tokensCommand() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:   "tokens FILE",
		Short: "Count the prompt tokens of a chat request",
		Long: `Print the prompt tokens of the request in FILE ("-" for stdin): {"messages": [...], "tools":
[...]} or a bare array of messages, counted as OpenAI's cookbook counts them (3 tokens per
message, every string field, 1 per name, 3 to prime the reply, tool definitions by its
num_tokens_for_tools). Plain output is the integer alone.`,
		Example: `  memctl tokens --model gpt-4o request.json
  memctl tokens --model gpt-4 --json messages.json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return usagef("tokens: --model is required")
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			data, err := readInput(a.stdin, args[0])
			if err != nil {
				return err
			}
			var req struct {
				Messages []memory.Message `json:"messages"`
				Tools    []memory.Tool    `json:"tools"`
			}
			if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "[") {
				err = json.Unmarshal(data, &req.Messages)
			} else {
				err = json.Unmarshal(data, &req)
			}
			if err != nil {
				return usagef("tokens %s: %v", args[0], err)
			}
			if len(req.Messages) == 0 {
				return usagef("tokens %s: no messages (want {\"messages\": [...], \"tools\": [...]} or an array of messages)", args[0])
			}
			c, err := a.tokenCounter(cfg, model)
			if err != nil {
				return err
			}
			enc := c.Encoding()
			n := c.CountMessages(req.Messages) + c.CountTools(req.Tools)
			if a.json {
				return a.printJSON(map[string]any{"prompt_tokens": n, "encoding": enc})
			}
			fmt.Fprintln(a.out, n)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model whose tokenizer counts (required)")
	return cmd
}

// tokenCounter returns the counter of the config's encoding_file, or the built-in counter of the
// config's encoding or of model (warning when the model is unknown).
func (a *app) tokenCounter(cfg config.Config, model string) (memory.TokenCounter, error) {
	if fc, err := cfg.Counter(); err != nil || fc != nil {
		if err != nil {
			return nil, err
		}
		if err := fc.Load(); err != nil {
			return nil, err
		}
		return fc, nil
	}
	enc, known, err := memory.ResolveEncoding(model, cfg.Encoding)
	if err != nil {
		return nil, usageError{err}
	}
	if !known {
		fmt.Fprintf(a.errOut, "memctl: warning: the tokenizer does not know model %q: counting with %s\n", model, enc)
	}
	return memory.NewTokenCounter(enc)
}
