package main

import (
	"github.com/spf13/cobra"
)

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
