package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

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
