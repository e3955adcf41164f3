// Package mcpserver is memcascade's Model Context Protocol server: tools that give an agent's
// model its own memory back. It can search and read what compaction moved out of its active
// context, pin a message so that it stays there verbatim, and ask for a compaction at a
// natural break. `memctl mcp` serves it over stdio and `memctl serve` at /mcp over streamable
// HTTP; both build it with New.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// Options are what a server serves.
type Options struct {
	// Compactor holds the store, the settings pins are checked against, the cascade that
	// memory_compact summarizes with, and the redactor.
	Compactor *compact.Compactor
	// Thread, when set, is the only thread the tools serve: their thread argument may be
	// left out, and naming another one is an error. Empty: every tool takes a thread.
	Thread string
	// Raw returns message text as stored. By default memory_read and memory_search redact
	// it as it is redacted for a summarizing provider: each message read with its neighbours
	// (Compactor.ReadProviderView), so that a password typed alone after a request for it or
	// a token cut in two is redacted as a compaction redacts it.
	Raw bool
	// ReadTokens bounds the messages one memory_read returns (0: DefaultReadTokens).
	ReadTokens int
	// Version is the server's version, as the initialize answer names it.
	Version string
}

// DefaultReadTokens is how many tokens of messages one memory_read returns at most.
const DefaultReadTokens = 8000

// Tool names.
const (
	ToolSearch      = "memory_search"
	ToolRead        = "memory_read"
	ToolCompactions = "memory_compactions"
	ToolPin         = "memory_pin"
	ToolUnpin       = "memory_unpin"
	ToolCompact     = "memory_compact"
)

// New returns an MCP server with the memory tools. It panics when opt has no Compactor.
func New(opt Options) *mcp.Server {
	if opt.Compactor == nil || opt.Compactor.Store == nil {
		panic("mcpserver: no compactor")
	}
	if opt.ReadTokens <= 0 {
		opt.ReadTokens = DefaultReadTokens
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	h := &handler{opt: opt, store: opt.Compactor.Store}
	s := mcp.NewServer(&mcp.Implementation{Name: "memcascade", Version: opt.Version}, &mcp.ServerOptions{
		Instructions: "Tools over this conversation's memory. Older messages may have been compacted into a summary; " +
			"the originals are kept. Search them with memory_search, read them with memory_read, keep one in context with memory_pin.",
	})
	mcp.AddTool(s, &mcp.Tool{Name: ToolSearch, Description: "Search this conversation's whole history, including messages a compaction " +
		"replaced by a summary, for every word of query (a word ending in * is a prefix). Hits come newest first, each with its seq, " +
		"role, a snippet with the matches in [brackets], and whether it is still in your active context. Use it when the summary " +
		"mentions something you need the exact details of (an id, a number, what a tool returned); then memory_read the seqs around a hit."},
		h.search)
	mcp.AddTool(s, &mcp.Tool{Name: ToolRead, Description: "Read the original messages from_seq..to_seq of a conversation, as they were " +
		"before any compaction: role, text, tool calls and results. The answer is bounded in tokens: when truncated is true, read " +
		"again from next_seq. A message larger than the bound comes alone and cut: its cut gives its whole size and next_offset; " +
		"read the rest with from_seq its seq and offset next_offset. Secrets are redacted."},
		h.read)
	mcp.AddTool(s, &mcp.Tool{Name: ToolCompactions, Description: "List the compactions of a conversation, newest first: the messages " +
		"each one summarized (from_seq..to_seq), its status and reason, and the facts (ids, amounts, paths) the summary kept and " +
		"the exact values it had to drop. Read dropped values back with memory_search."},
		h.compactions)
	mcp.AddTool(s, &mcp.Tool{Name: ToolPin, Description: "Pin message seq of a conversation: it stays in your active context verbatim " +
		"whatever later compactions summarize (a tool call is pinned with its results), and it counts against the context budget. " +
		"A pin that would not fit is refused, saying why. Pin what you must quote exactly later: a booking id, a user's constraint."},
		h.pin)
	mcp.AddTool(s, &mcp.Tool{Name: ToolUnpin, Description: "Remove the pin that holds message seq of a conversation: later compactions " +
		"may summarize it again."},
		h.unpin)
	mcp.AddTool(s, &mcp.Tool{Name: ToolCompact, Description: "Compact a conversation now, at a natural break (a task finished): the " +
		"older messages are replaced by a summary in your active context; pinned messages and the newest turn stay. The originals " +
		"remain searchable. reason says why, in a few words; the compaction is recorded with reason requested."},
		h.compact)
	return s
}

type handler struct {
	opt   Options
	store *memory.Store
}

// thread resolves a tool's thread argument against the server's fixed thread.
func (h *handler) thread(arg string) (string, error) {
	switch {
	case h.opt.Thread != "" && arg != "" && arg != h.opt.Thread:
		return "", fmt.Errorf("thread %q: this server serves thread %q only", arg, h.opt.Thread)
	case h.opt.Thread != "":
		return h.opt.Thread, nil
	case arg == "":
		return "", errors.New("thread: required (this server serves every thread: name one)")
	}
	return arg, nil
}

// redact redacts text unless the server is raw.
func (h *handler) redact(text string) string {
	if h.opt.Raw || h.opt.Compactor.Redact == nil {
		return text
	}
	return h.opt.Compactor.Redact(text)
}

// SearchInput are memory_search's arguments.
type SearchInput struct {
	Query  string `json:"query" jsonschema:"the words to find; every word must match; a word ending in * is a prefix"`
	Thread string `json:"thread,omitempty" jsonschema:"the conversation (thread id); may be left out when the server serves one thread"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many hits (default 10, at most 100)"`
}

// SearchOutput is memory_search's answer.
type SearchOutput struct {
	Hits []memory.SearchHit `json:"hits"`
}

func (h *handler) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	thread := in.Thread
	if h.opt.Thread != "" || thread != "" {
		var err error
		if thread, err = h.thread(in.Thread); err != nil {
			return nil, SearchOutput{}, err
		}
	}
	opt := memory.SearchOptions{Thread: thread, Limit: in.Limit}
	if !h.opt.Raw {
		opt.Redact, opt.RedactMessages = h.opt.Compactor.Redact, h.opt.Compactor.ProviderView
	}
	hits, err := h.store.Search(ctx, in.Query, opt)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	return nil, SearchOutput{Hits: hits}, nil
}

// ReadInput are memory_read's arguments.
type ReadInput struct {
	Thread  string `json:"thread,omitempty" jsonschema:"the conversation (thread id); may be left out when the server serves one thread"`
	FromSeq int64  `json:"from_seq" jsonschema:"the first message to read (seq, from 1)"`
	ToSeq   int64  `json:"to_seq" jsonschema:"the last message to read (seq)"`
	// Offset reads message FromSeq from that byte of its text on (its cut's next_offset).
	Offset int64 `json:"offset,omitempty" jsonschema:"to read on in a message cut for size: the next_offset of its cut (bytes of its text, then of its tool-call arguments); the answer is that part of message from_seq"`
}

// ReadMessage is one message of memory_read.
type ReadMessage struct {
	Seq        int64      `json:"seq"`
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ReadCall `json:"tool_calls,omitempty"`
	// Tokens is the message's count as stored; for a cut message, that of the part shown.
	Tokens int `json:"tokens"`
	// Cut is set when the message is over the bound alone: Content and the tool calls'
	// Arguments are one part of its text.
	Cut *ReadCut `json:"cut,omitempty"`
}

// ReadCut says what part of a message memory_read shows, and how to read the rest. The
// message's text, as offsets count it, is its content then each tool call's arguments, as
// shown (redacted unless the server is raw).
type ReadCut struct {
	Tokens int   `json:"tokens"` // the whole message, as stored
	Bytes  int64 `json:"bytes"`  // the whole text
	Offset int64 `json:"offset"` // where the part shown starts in it
	// NextOffset is where the rest starts: read on with from_seq the message's seq and offset
	// this (0: the part shown ends the message).
	NextOffset int64  `json:"next_offset,omitempty"`
	Note       string `json:"note"`
}

// ReadCall is a tool call of a message of memory_read.
type ReadCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ReadOutput is memory_read's answer.
type ReadOutput struct {
	Thread   string        `json:"thread"`
	Messages []ReadMessage `json:"messages"`
	// Truncated: the token bound stopped the answer before ToSeq; read on from NextSeq.
	Truncated bool  `json:"truncated"`
	NextSeq   int64 `json:"next_seq,omitempty"`
}

// ThreadInput are the arguments of a tool that takes only a thread.
type ThreadInput struct {
	Thread string `json:"thread,omitempty" jsonschema:"the conversation (thread id); may be left out when the server serves one thread"`
}

// Compaction is one compaction of memory_compactions.
type Compaction struct {
	ID           int64     `json:"id"`
	Status       string    `json:"status"`
	Reason       string    `json:"reason"`
	Strategy     string    `json:"strategy"`
	CreatedAt    time.Time `json:"created_at"`
	FromSeq      int64     `json:"from_seq,omitempty"`
	ToSeq        int64     `json:"to_seq,omitempty"`
	Summarized   int       `json:"summarized_messages"`
	TokensBefore int       `json:"tokens_before"`
	TokensAfter  int       `json:"tokens_after"`
	FactsTotal   int       `json:"facts_total"`
	FactsKept    int       `json:"facts_kept"`
	FactsDropped []string  `json:"facts_dropped"`
	Superseded   bool      `json:"superseded,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// CompactionsOutput is memory_compactions' answer.
type CompactionsOutput struct {
	Thread      string       `json:"thread"`
	Compactions []Compaction `json:"compactions"`
	// Held says why the breaker holds the thread after failed compactions in a row ("": it
	// does not): a compaction that is not forced makes no provider request.
	Held string `json:"held,omitempty"`
}

func (h *handler) compactions(ctx context.Context, _ *mcp.CallToolRequest, in ThreadInput) (*mcp.CallToolResult, CompactionsOutput, error) {
	thread, err := h.thread(in.Thread)
	if err != nil {
		return nil, CompactionsOutput{}, err
	}
	t, err := h.store.Thread(ctx, thread)
	if err != nil {
		return nil, CompactionsOutput{}, err
	}
	reps, err := h.store.Reports(ctx, thread, 100)
	if err != nil {
		return nil, CompactionsOutput{}, err
	}
	out := CompactionsOutput{Thread: thread, Compactions: []Compaction{}}
	for _, r := range reps {
		c := Compaction{Status: string(r.Status), Reason: string(r.Reason), Strategy: r.Strategy, CreatedAt: r.CreatedAt, FromSeq: r.FromSeq, ToSeq: r.ToSeq,
			Summarized: r.SummarizedMessages, TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, FactsTotal: r.FactsTotal,
			FactsKept: r.FactsKept, FactsDropped: []string{}, Superseded: r.Superseded, Detail: h.redact(r.Detail)}
		c.ID = r.ID
		for _, f := range r.FactsDropped {
			c.FactsDropped = append(c.FactsDropped, h.redact(f))
		}
		out.Compactions = append(out.Compactions, c)
	}
	if set, err := h.opt.Compactor.SettingsFor(ctx, thread, compact.ThreadSettings{}); err == nil {
		why, err := compact.Held(ctx, h.store, t, set)
		if err != nil {
			return nil, CompactionsOutput{}, err
		}
		out.Held = h.redact(why)
	}
	return nil, out, nil
}

// PinInput are memory_pin's and memory_unpin's arguments.
type PinInput struct {
	Thread string `json:"thread,omitempty" jsonschema:"the conversation (thread id); may be left out when the server serves one thread"`
	Seq    int64  `json:"seq" jsonschema:"the message (seq, as memory_search and memory_read give it)"`
}

// PinOutput is memory_pin's and memory_unpin's answer.
type PinOutput struct {
	Thread string `json:"thread"`
	Seq    int64  `json:"seq"`
	Pinned bool   `json:"pinned"`
	// FromSeq and ToSeq are the messages the pin holds (the message's unit).
	FromSeq int64 `json:"from_seq,omitempty"`
	ToSeq   int64 `json:"to_seq,omitempty"`
}

func (h *handler) pin(ctx context.Context, _ *mcp.CallToolRequest, in PinInput) (*mcp.CallToolResult, PinOutput, error) {
	thread, err := h.thread(in.Thread)
	if err != nil {
		return nil, PinOutput{}, err
	}
	p, err := h.opt.Compactor.Pin(ctx, thread, in.Seq)
	if err != nil {
		return nil, PinOutput{}, err
	}
	return nil, PinOutput{Thread: thread, Seq: p.Seq, Pinned: true, FromSeq: p.FromSeq, ToSeq: p.ToSeq}, nil
}

func (h *handler) unpin(ctx context.Context, _ *mcp.CallToolRequest, in PinInput) (*mcp.CallToolResult, PinOutput, error) {
	thread, err := h.thread(in.Thread)
	if err != nil {
		return nil, PinOutput{}, err
	}
	if err := h.store.Unpin(ctx, thread, in.Seq); err != nil {
		return nil, PinOutput{}, err
	}
	return nil, PinOutput{Thread: thread, Seq: in.Seq}, nil
}

// CompactInput are memory_compact's arguments.
type CompactInput struct {
	Thread string `json:"thread,omitempty" jsonschema:"the conversation (thread id); may be left out when the server serves one thread"`
	Reason string `json:"reason,omitempty" jsonschema:"why now, in a few words (for example: booking done, next task)"`
	// Instructions go into the summary's prompt (compact.Options.Instructions).
	Instructions string `json:"instructions,omitempty" jsonschema:"what the summary must keep or stress (for example: keep the refund amounts); at most 8 KiB"`
}

// CompactOutput is memory_compact's answer.
type CompactOutput struct {
	Thread       string `json:"thread"`
	CompactionID int64  `json:"compaction_id,omitempty"`
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	FromSeq      int64  `json:"from_seq,omitempty"`
	ToSeq        int64  `json:"to_seq,omitempty"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	Detail       string `json:"detail,omitempty"`
}

func (h *handler) compact(ctx context.Context, _ *mcp.CallToolRequest, in CompactInput) (*mcp.CallToolResult, CompactOutput, error) {
	thread, err := h.thread(in.Thread)
	if err != nil {
		return nil, CompactOutput{}, err
	}
	r, err := h.opt.Compactor.Compact(ctx, thread, compact.Options{Requested: true, Instructions: in.Instructions})
	if err != nil {
		return nil, CompactOutput{}, err
	}
	out := CompactOutput{Thread: thread, Status: string(r.Status), Reason: string(r.Reason), FromSeq: r.FromSeq, ToSeq: r.ToSeq,
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, Detail: h.redact(r.Detail)}
	out.CompactionID = r.ID
	return nil, out, nil
}
