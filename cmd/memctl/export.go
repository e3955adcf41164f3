package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

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
func exportMessages(ctx context.Context, s *memory.Store, thread string, all bool) ([]chat.Message, error) {
	msgs := []chat.Message{}
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
