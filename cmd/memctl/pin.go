package main

import (
	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/compact"
)

func (a *app) pinCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "pin THREAD SEQ",
		ValidArgsFunction: a.completeThreads,
		Short:             "Keep a message in the active context verbatim",
		Long: `Pin message SEQ of THREAD: it stays in the active context as it is, whatever a compaction
covers, and its tokens count in the budget. The whole unit of the message is pinned with it
(an assistant message with the tool results that answer its calls). A pinned message a summary
covers is shown after the system messages, before the summary. A pin that would not leave room
within the limit (token_limit - reserve_tokens, the thread's or the config's) for the newest
messages and a summary is refused (exit 1), saying so; so is a message whose tool call has
no result yet. Pinning a message again changes nothing. Pins survive compaction, revert and
copy; memctl show marks them.

A pinned system or developer message is the thread's current instructions (memctl serve pins
each system prompt an agent changes): it leads the active context, and the instructions before
it (the thread's leading system messages, system messages pinned earlier) are no longer kept:
the next compaction summarizes them with the middle.`,
		Example: `  memctl pin support-42 17
  memctl unpin support-42 17`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := seqArg(args[1])
			if err != nil {
				return err
			}
			s, cfg, err := a.storeWithConfig(cmd, args[0])
			if err != nil {
				return err
			}
			c := &compact.Compactor{Store: s, Settings: cfg.Settings()}
			p, err := c.Pin(cmd.Context(), args[0], seq)
			if err != nil {
				return err
			}
			return a.printResult(p, "pinned message %d of %s (its unit: messages %d-%d)\n", p.Seq, termLine(args[0]), p.FromSeq, p.ToSeq)
		},
	}
}
