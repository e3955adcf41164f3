package main

import (
	"strconv"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/memory"
	"github.com/spf13/cobra"
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
copy; memctl show marks them.`,
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
			c := &memory.Compactor{Store: s, Settings: cfg.Settings()}
			p, err := c.Pin(cmd.Context(), args[0], seq)
			if err != nil {
				return err
			}
			return a.printResult(p, "pinned message %d of %s (its unit: messages %d-%d)\n", p.Seq, termLine(args[0]), p.FromSeq, p.ToSeq)
		},
	}
}

func (a *app) unpinCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "unpin THREAD SEQ",
		ValidArgsFunction: a.completeThreads,
		Short:             "Remove the pin that holds a message",
		Long: `Remove the pin that holds message SEQ of THREAD (any message of the pinned unit names it).
A message no pin holds is exit 1. The message is then compacted like any other.`,
		Example: `  memctl unpin support-42 17`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := seqArg(args[1])
			if err != nil {
				return err
			}
			s, _, err := a.storeWithConfig(cmd, args[0])
			if err != nil {
				return err
			}
			if err := s.Unpin(cmd.Context(), args[0], seq); err != nil {
				return err
			}
			return a.printResult(map[string]any{"thread": args[0], "seq": seq, "unpinned": true}, "unpinned message %d of %s\n", seq, termLine(args[0]))
		},
	}
}

// storeWithConfig checks a thread argument and opens the store for writing.
func (a *app) storeWithConfig(cmd *cobra.Command, thread string) (*memory.Store, config.Config, error) {
	if err := threadArg(thread); err != nil {
		return nil, config.Config{}, err
	}
	return a.openWithConfig(cmd.Context(), forWriting)
}

// seqArg parses a message's seq: a whole number from 1.
func seqArg(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, usagef("SEQ %q: must be a message's seq, a whole number from 1", s)
	}
	return n, nil
}
