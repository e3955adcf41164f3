package main

import (
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/mcpserver"
)

func (a *app) mcpCommand() *cobra.Command {
	var thread string
	var raw bool
	var readTokens int
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the memory tools to a model over the Model Context Protocol (stdio)",
		Long: `Serve a Model Context Protocol server on stdin and stdout: tools that let an agent's model
search and read what compaction moved out of its context, pin messages, and ask for a
compaction. An MCP client (an agent, a desktop assistant) starts it as a command.

Tools: memory_search(query, thread?, limit?) full-text search, archived messages and
summaries included, newest first, each hit with its seq, role, snippet and whether it is in
the active context; memory_read(thread, from_seq, to_seq, offset?) the original messages of
a range, at most --read-tokens tokens (a larger message comes alone, cut, and offset reads
on); memory_compactions(thread) what each compaction covered and the facts it kept and
dropped; memory_pin(thread, seq) and memory_unpin(thread, seq); memory_compact(thread,
reason?) a compaction recorded with reason requested.

With --thread every tool serves that thread only (its thread argument may be left out).
Text is redacted as it is for a summarizing provider unless --raw. Pins are checked against
the config's compaction settings and the thread's; memory_compact compacts with the config's
cascade. Logs go to stderr; stdout carries the protocol only.`,
		Example: `  memctl mcp --thread support-42
  memctl --db /srv/agents.db mcp`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("thread") {
				if err := threadArg(thread); err != nil {
					return usagef("--thread: %v", err)
				}
			}
			if err := positiveFlag("read-tokens", readTokens); err != nil {
				return err
			}
			if _, err := a.open(cmd.Context(), forWriting); err != nil {
				return err
			}
			c, _, err := a.newCompactor(cascade.Options{Logger: a.logger}, compact.Config{Logger: a.logger})
			if err != nil {
				return err
			}
			v, _, _, _ := buildStamp()
			srv := mcpserver.New(mcpserver.Options{Compactor: c, Thread: thread, Raw: raw, ReadTokens: readTokens, Version: v})
			return srv.Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
		},
	}
	f := cmd.Flags()
	f.StringVar(&thread, "thread", "", "serve this thread only")
	f.BoolVar(&raw, "raw", false, "return message text as stored, unredacted")
	f.IntVar(&readTokens, "read-tokens", mcpserver.DefaultReadTokens, "the most tokens of messages one memory_read returns")
	return cmd
}

// nopWriteCloser is a writer whose Close does nothing: the protocol's end leaves stdout open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
