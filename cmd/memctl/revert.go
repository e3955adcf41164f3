package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

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
				r, err = s.Revert(cmd.Context(), "", id)
			} else {
				r, err = s.Revert(cmd.Context(), args[0], 0)
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
