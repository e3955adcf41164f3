package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/compact"
)

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

// completeCascade completes --cascade: default and the config's cascades.
func (a *app) completeCascade(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.cascadeNames(toComplete, compact.DefaultCascade), cobra.ShellCompDirectiveNoFileComp
}

// completePartCascade completes --part-cascade: none, default and the config's cascades.
func (a *app) completePartCascade(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.cascadeNames(toComplete, compact.NoCascade, compact.DefaultCascade), cobra.ShellCompDirectiveNoFileComp
}

// cascadeNames are fixed and the config's cascades that start with prefix.
func (a *app) cascadeNames(prefix string, fixed ...string) []cobra.Completion {
	names := fixed
	if cfg, err := a.config(); err == nil {
		names = append(names, cfg.CascadeNames()...)
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
