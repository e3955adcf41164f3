package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memcascade/memcascade/memory"
)

func (a *app) searchCommand() *cobra.Command {
	var thread string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over every stored message and summary",
		Long: `Search every stored message and summary, archived ones included. Each word of QUERY must
match; a word ending in * matches the words that start with it (OBUT* finds OBUT9V). Any
other text is a valid query too: it is never read as search syntax.

Columns: THREAD the thread; SEQ the message's place in it ("summary N" for the summary of
compaction N); ROLE the message's role; STATE active (the active context holds it as it
is: pinned messages too) or archived (covered by a summary, left out, masked or cut by a view,
or a superseded summary); SNIPPET the text around the match, the matched words in [brackets] on
a terminal (plain text in a pipe; the JSON snippet always has them).

The hits are ranked as memory_search (MCP) and serve's /api/search rank them: the messages
first, best match first, then the summaries; a superseded summary is left out when the newer
summary that folded it in matched too. With --thread, best is judged among that thread's own
messages and summaries, whatever other threads hold.`,
		Example: `  memctl search "reservation ZFA04Y"
  memctl search 'OBUT*'
  memctl search gpt-4o --thread support-42 --limit 5 --json`,
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := positiveFlag("limit", limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("thread") {
				if err := threadArg(thread); err != nil {
					return fmt.Errorf("--thread: %w", err)
				}
			}
			query := strings.Join(args, " ")
			if strings.TrimSpace(query) == "" {
				return usagef("search: the query is empty: give one or more words")
			}
			return a.search(cmd.Context(), query, memory.SearchOptions{Thread: thread, Limit: limit})
		},
	}
	cmd.Flags().StringVar(&thread, "thread", "", "search only this thread")
	cmd.RegisterFlagCompletionFunc("thread", a.completeThreadFlag)
	cmd.Flags().IntVar(&limit, "limit", memory.DefaultSearchLimit, fmt.Sprintf("at most this many results (at most %d)", memory.MaxSearchLimit))
	return cmd
}

// search prints the hits of query (an unknown opt.Thread is exit 1).
func (a *app) search(ctx context.Context, query string, opt memory.SearchOptions) error {
	s, err := a.open(ctx, forReading)
	if err != nil {
		return err
	}
	if opt.Thread != "" {
		if _, err := s.Thread(ctx, opt.Thread); err != nil {
			return err
		}
	}
	hits, err := s.Search(ctx, query, opt)
	if err != nil {
		return err
	}
	marks := terminal(a.stdout) // [match] brackets on a terminal, plain text in a pipe
	return a.printTable(hits, "THREAD\tSEQ\tROLE\tSTATE\tSNIPPET", func(tw *table) {
		for _, h := range hits {
			where := fmt.Sprint(h.Seq)
			if h.CompactionID != 0 {
				where = fmt.Sprintf("summary %d", h.CompactionID)
			}
			state := "archived"
			if h.InActiveContext {
				state = "active"
			}
			snippet := h.Snippet
			if !marks {
				snippet = plainSnippet(h)
			}
			tw.row(h.Thread, where, h.Role, state, oneLine(unescapeJSON(snippet)))
		}
	})
}

// jsonEscapes turns the escapes of JSON text (a tool call's arguments, a JSON tool result) into
// what they stand for in a table's one-line snippet: a line break shows as one, not as \n.
var jsonEscapes = strings.NewReplacer(`\n`, "\n", `\r`, " ", `\t`, " ", `\"`, `"`, `\\`, `\`)

// unescapeJSON is s with jsonEscapes replaced twice: a tool call's arguments are JSON text
// within the JSON of the tool calls, so a line break in them is escaped twice (\\n). A
// backslash before an n in text escaped once (a JSON tool result's "C:\\new") shows as a line
// break too: the table's snippet is for reading; --json keeps it as stored.
func unescapeJSON(s string) string {
	return jsonEscapes.Replace(jsonEscapes.Replace(s))
}

// plainSnippet is the snippet of h without the brackets around its matches.
func plainSnippet(h memory.SearchHit) string {
	var b strings.Builder
	at := 0
	for _, m := range h.Marks {
		b.WriteString(h.Snippet[at : m[0]-1])
		b.WriteString(h.Snippet[m[0]:m[1]])
		at = m[1] + 1
	}
	b.WriteString(h.Snippet[at:])
	return b.String()
}
