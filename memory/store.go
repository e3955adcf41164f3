// Package memory is the store of memcascade: conversations kept as append-only threads in one
// SQLite file or a PostgreSQL database (Store).
//
// A thread's history is never rewritten. Its active context, what the agent sends to its
// model, is derived: the leading system/developer messages and the pinned ones, then the
// current summary (if the thread was compacted; a view may keep several, each a block of its
// own over its own range, oldest first), then every message after the range the summaries
// cover, as the thread's current view shows them (masked or cut tool results).
//
// It owns every row of threads, messages, pins and compactions; the unit rule a plan and a pin
// share (Cuts, PinnedLen); the views; the reports a compaction leaves (Report, Store.Reports,
// Store.Revert); the error codes hosts map (ErrorCode); and the clock of the system
// (Store.Now). It counts tokens with package tokencount and keeps messages as package chat
// defines them. A thread's compaction settings are a JSON object it stores as given, a
// compaction's reason a string. The housekeeping of the database itself (backup, vacuum,
// check) is its db.Handle's.
//
// The compaction policy and engine are package compact: the settings and their rules, why a
// compaction runs and the statuses of one that does not, the plan, the summaries, and the
// commits through the store's Compactions writer. memory never imports compact, nor the
// provider cascade, config, serve or cmd/memctl.
package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/tokencount"
	"github.com/memcascade/memcascade/tokenizer"
)

// Sentinel errors.
var (
	// ErrThreadNotFound: no thread has that id.
	ErrThreadNotFound = errors.New("thread not found")
	// ErrCompactionNotFound: no compaction has that id.
	ErrCompactionNotFound = errors.New("compaction not found")
	// errNoMessages: an append or import held no message.
	errNoMessages = errors.New("no messages")
)

// Store is a conversation memory in one SQLite file or one PostgreSQL database. It is safe for
// concurrent use, and several processes may use the same database. Its settings are given when
// it is built (Options) and do not change after.
type Store struct {
	clock        func() time.Time
	leaseFor     time.Duration // 0: defaultLease; see lease.go
	defaultModel string
	// encoding, when set, is the tokenizer of new threads whatever their model.
	encoding string
	logger   *slog.Logger

	h *db.Handle
	// ownsHandle: Open opened h, so Close closes it.
	ownsHandle bool
	mu         sync.Mutex
	counters   map[string]tokencount.Counter
	// batch is the group commit of the live appends (AppendOptions.Live) (batch.go).
	batch batcher
}

// Options are a store's settings, given to New (or, within OpenOptions, to Open). The zero
// value is a store with the defaults.
type Options struct {
	// DefaultModel is the model of a thread created without one ("": "gpt-4o").
	DefaultModel string
	// Encoding, when set, is the tokenizer of new threads whatever their model: a built-in
	// encoding (see tokencount.Encodings).
	Encoding string
	// Counter, when set, counts every thread whose encoding is Counter.Encoding() and is the
	// tokenizer of new threads (it wins over Encoding). It is how a host brings its own
	// tokenizer, and how a vocabulary file (tokencount.NewFileCounter) is used. A counter with a
	// Load() error method (BPECounter) is loaded by the first Store.Counter call that returns
	// it, which returns its error. A counter of another type may not take a built-in
	// encoding's name: New refuses it.
	Counter tokencount.Counter
	// Logger, when set, receives a warning for each interrupted compaction the store marks
	// failed, New's recovery included (keys thread, compaction_id, owner_host, owner_pid).
	// nil: silent.
	Logger *slog.Logger
	// Now is the clock of the whole system (Store.Now), read by New's recovery of interrupted
	// compactions too, so that the leases are judged by it. nil: time.Now.
	Now func() time.Time
	// Lease is how long a running compaction's lease lasts; it is renewed every third of that
	// while the compaction works. 0: 30 seconds.
	Lease time.Duration
}

// New returns the store over the open database h, with the settings opt: the program that opened h (db.OpenHandle)
// builds on it the store and, when it compacts, the provider cascade, which keeps its
// cooldowns and attempt log in the same database; it closes h once it is done with both
// (Store.Close leaves h open). A compaction left running by a process that no longer exists is
// marked failed with the error "interrupted".
func New(ctx context.Context, h *db.Handle, opt Options) (*Store, error) {
	s := &Store{
		clock:        time.Now,
		leaseFor:     opt.Lease,
		defaultModel: "gpt-4o",
		encoding:     opt.Encoding,
		logger:       opt.Logger,
		h:            h,
		counters:     map[string]tokencount.Counter{},
	}
	if opt.Now != nil {
		s.clock = opt.Now
	}
	if opt.DefaultModel != "" {
		s.defaultModel = opt.DefaultModel
	}
	if c := opt.Counter; c != nil {
		if _, builtin := c.(*tokencount.BPECounter); !builtin && tokenizer.Known(c.Encoding()) {
			return nil, fmt.Errorf("counter: the encoding name %q is a built-in encoding's: name your tokenizer otherwise", c.Encoding())
		}
		s.counters[c.Encoding()] = c
		s.encoding = c.Encoding()
	}
	if err := s.failInterrupted(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenOptions set what opening a store may do to its file, and the store's Options.
type OpenOptions struct {
	Options
	// NoCreate refuses a missing or empty file (db.ErrNoDatabase) instead of creating it. An
	// existing database is still migrated.
	NoCreate bool
	// ReadOnly is for a caller that only reads: it implies NoCreate, and the file is never
	// migrated (a database written by an older version is db.ErrOlderSchema: open it once without
	// ReadOnly to upgrade it) nor marked with the application id.
	ReadOnly bool
}

// Open opens the store at path, creating the file (mode 0600) when missing and migrating an
// older schema, as opt says (at most one; the default OpenOptions without): it opens the
// database and builds the store over it (New); the store's Close closes both. A compaction
// left running by a process that no longer exists is marked failed with the error
// "interrupted". A file that is not a memcascade database is refused (*db.ForeignError) and
// left byte-identical. path may be a postgres:// URL when the program links the PostgreSQL
// backend in (import _ "github.com/memcascade/memcascade/db/postgres"); without it the open
// fails naming that import (db.ErrNoPostgres).
func Open(ctx context.Context, path string, opts ...OpenOptions) (*Store, error) {
	if len(opts) > 1 {
		return nil, fmt.Errorf("open %s: %d OpenOptions given; at most one", db.Display(path), len(opts))
	}
	var opt OpenOptions
	if len(opts) == 1 {
		opt = opts[0]
	}
	// The queries are prepared once: appends run InsertMessage once per message.
	h, err := db.OpenHandle(ctx, path, db.Options{NoCreate: opt.NoCreate, ReadOnly: opt.ReadOnly})
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, h, opt.Options)
	if err != nil {
		h.Close()
		return nil, err
	}
	s.ownsHandle = true
	return s, nil
}

// readTx runs f in one read transaction of the store: what it reads is one snapshot.
func readTx[T any](ctx context.Context, s *Store, f func(q db.Querier) (T, error)) (T, error) {
	var v T
	err := s.h.ReadTx(ctx, func(q db.Querier) error {
		var err error
		v, err = f(q)
		return err
	})
	return v, err
}

// Close ends the store: an append that comes after is refused. It closes the database when
// Open opened it; a store built by New leaves its handle to the caller.
func (s *Store) Close() error {
	s.stopBatches()
	if !s.ownsHandle {
		return nil
	}
	return s.h.Close()
}

// DB returns the database handle, for tests and benchmarks that read or write rows the store
// does not show. A program that builds a cascade on the store's database opens the handle
// itself and gives it to both (see New).
func (s *Store) DB() *db.Handle { return s.h }

// Now is the clock of the whole system (Options.Now): the store's rows, leases and reports,
// and the attempts and cooldowns of a cascade built with it as its clock.
func (s *Store) Now() time.Time { return s.clock() }

// MakeStorable returns s as the store can keep it (db.MakeStorable, for packages that reach the
// database only through memory, as compact does): each NUL character and each byte that is not
// UTF-8 replaced by U+FFFD.
func MakeStorable(s string) string { return db.MakeStorable(s) }

func (s *Store) now() int64 { return s.clock().UnixMilli() }

// Counter returns the token counter for an encoding, shared by every thread that uses it: the
// counter of Options.Counter for that name, or the built-in one of a built-in encoding. Any
// other name is an error; in particular a thread counted with a vocabulary file ("file:...")
// is counted only by a counter made from the same file and pattern, never by another.
func (s *Store) Counter(encoding string) (tokencount.Counter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.counters[encoding]; ok {
		if l, ok := c.(interface{ Load() error }); ok {
			// A vocabulary file is parsed on first use: its errors are returned here.
			if err := l.Load(); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	c, err := tokencount.NewCounter(encoding)
	if err != nil {
		return nil, err
	}
	s.counters[encoding] = c
	return c, nil
}

// NewThreadCounter returns the counter a thread made now for model would be counted with (its
// encoding as an append that creates it picks it): a host can measure messages before the
// thread they would create exists.
func (s *Store) NewThreadCounter(model string) (tokencount.Counter, error) {
	enc, _, err := s.newThreadEncoding(model)
	if err != nil {
		return nil, err
	}
	return s.Counter(enc)
}

// newThreadEncoding picks the encoding of a new thread: that of Options.Counter when there is
// one, else ResolveEncoding's.
func (s *Store) newThreadEncoding(model string) (string, bool, error) {
	s.mu.Lock()
	_, custom := s.counters[s.encoding]
	s.mu.Unlock()
	if custom && s.encoding != "" {
		return s.encoding, true, nil
	}
	return tokencount.ResolveEncoding(model, s.encoding)
}

// Thread describes a thread and its active context.
type Thread struct {
	ID             string    `json:"id"`
	Model          string    `json:"model"`
	Encoding       string    `json:"encoding"`
	Messages       int       `json:"messages"`
	ActiveMessages int       `json:"active_messages"`
	ActiveTokens   int       `json:"active_tokens"`
	Compactions    int       `json:"compactions"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Settings are the compaction settings stored on the thread, a JSON object ({} for none;
	// compact.ParseThreadSettings reads them); set by Thread and Threads.
	Settings json.RawMessage `json:"settings"`
	// Upstream is what the upstream model reported of the prompts of the replies memctl serve
	// stored in the thread (zero for a thread no reply with usage was stored in).
	Upstream ReplyUsage `json:"upstream"`
	// CompactionCost sums the cost in dollars of its compactions' provider attempts, and Cost
	// is that plus Upstream.Cost; each is nil (omitted in JSON) when none of what it sums was
	// priced.
	CompactionCost *float64 `json:"compaction_cost,omitempty"`
	Cost           *float64 `json:"cost,omitempty"`
}

// Threads lists every thread, most recently updated first. It reads stored counts only: no
// message is decoded and no tokenizer is loaded.
func (s *Store) Threads(ctx context.Context) ([]Thread, error) {
	ts, err := s.threads(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return ts, nil
}

// Thread returns one thread.
func (s *Store) Thread(ctx context.Context, id string) (Thread, error) {
	if id == "" {
		return Thread{}, fmt.Errorf("%w: empty id", ErrThreadNotFound)
	}
	ts, err := s.threads(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	if len(ts) == 0 {
		return Thread{}, fmt.Errorf("%w: %q", ErrThreadNotFound, id)
	}
	return ts[0], nil
}

func (s *Store) threads(ctx context.Context, only string) ([]Thread, error) {
	rows, err := s.h.Q().ListThreads(ctx, only)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, len(rows))
	for i, r := range rows {
		t := threadFromRow(r.ID, r.Model, r.Encoding, r.LastSeq, r.CreatedAt, r.UpdatedAt)
		t.Compactions = int(r.Compactions)
		t.ActiveMessages, t.ActiveTokens = int(r.ActiveMessages), int(r.ActiveTokens)
		if r.Compacted != 0 {
			t.ActiveMessages++
			t.ActiveTokens += int(r.SummaryTokens)
		}
		if t.ActiveMessages > 0 {
			t.ActiveTokens += tokencount.ReplyPriming
		}
		t.Settings = settingsJSON(r.Settings)
		t.Upstream = ReplyUsage{Replies: int(r.Replies), PromptTokens: int(r.PromptTokens), CachedTokens: int(r.CachedTokens)}
		if r.PromptTokens > 0 {
			t.Upstream.CachedShare = math.Round(float64(r.CachedTokens)/float64(r.PromptTokens)*1000) / 1000
		}
		compactions := sumOf(r.CompactionCostMicros, r.CompactionPriced)
		t.Upstream.Cost, t.CompactionCost = dollarsOf(r.UpstreamCostMicros), dollarsOf(compactions)
		t.Cost = dollarsOf(addCosts(r.UpstreamCostMicros, compactions))
		if r.Pins > 0 && r.Compactions > 0 {
			// A pin a summary covers is in the active context: the stored counts do not say.
			a, err := s.Active(ctx, r.ID, ReadOptions{Light: true})
			if err != nil {
				return nil, err
			}
			t.ActiveMessages, t.ActiveTokens = len(a.Entries), a.Tokens
		}
		out[i] = t
	}
	return out, nil
}

func threadFromRow(id, model, enc string, lastSeq, created, updated int64) Thread {
	return Thread{ID: id, Model: model, Encoding: enc, Messages: int(lastSeq),
		CreatedAt: time.UnixMilli(created).UTC(), UpdatedAt: time.UnixMilli(updated).UTC()}
}

// Entry is a message of a thread with its place and its token count (cascade.Entry, a rung
// of the provider cascade, is another concept under the same short name).
type Entry struct {
	// Seq is the message's place in the thread (1, 2, ...); 0 for a summary.
	Seq     int64
	Tokens  int
	Message chat.Message
	// CompactionID is set on the summary entry of an active context: the compaction that wrote
	// it, which covers the messages CoversFrom to CoversTo.
	CompactionID         int64
	CoversFrom, CoversTo int64
	// Pinned is set on a pinned message (Store.Pin) and the rest of its unit: it stays in the
	// active context verbatim. One a summary covers is shown after the leading system
	// messages, before the summary.
	Pinned bool
	// Superseded is set on instructions a later pinned system/developer message replaced (see
	// Store.Pin): the thread's leading system/developer messages, or a system/developer
	// message pinned before. It is an ordinary message of the active context, which a
	// compaction summarizes with the middle; a host leaves it out of what its model gets.
	Superseded bool

	// text is the message's text when the entry was read light (see ReadOptions.Light): its
	// Message then holds role, name, tool calls and tool_call_id, not content or Extra.
	text  string
	light bool
	// mark is set when the entry is shown masked or cut by a compaction's view (see Mark).
	mark *Mark
	// planned is set on a summary entry read from the store: the thread's last seq when the
	// compaction that wrote it was planned (see supersede).
	planned int64
}

// Text returns the entry's text content (see Message.Text).
func (e Entry) Text() string {
	if e.light {
		return e.text
	}
	return e.Message.Text()
}

// Active is a thread's active context: what the agent sends to its model.
type Active struct {
	Thread  Thread
	Entries []Entry
	// Tokens is the prompt size of Entries: their stored counts plus the reply priming.
	Tokens int
	// Summary is the compaction whose summary is in the context (0: none), the newest when a
	// view keeps several (each entry of one has CompactionID set). It covers the messages
	// FromSeq to ToSeq.
	Summary        int64
	FromSeq, ToSeq int64

	// Current is the thread's current compaction, from whose row the view is derived (0: none).
	// A compaction planned on this context commits only while this is still current.
	Current int64

	// Version and History are set by a live read only (ReadOptions.Live, AppendResult.Read):
	// the version the context is of, and the thread's whole history, read in the same snapshot.
	Version Version
	History []chat.Message

	// summaryPlanned is the thread's last seq when the compaction that wrote Summary was
	// planned: superseded instructions pinned then were not summarized (see withPins).
	summaryPlanned int64
}

// Messages returns the messages of the active context.
func (a Active) Messages() []chat.Message {
	out := make([]chat.Message, len(a.Entries))
	for i, e := range a.Entries {
		out[i] = e.Message
	}
	return out
}

// ReadOptions say how a read builds its entries.
type ReadOptions struct {
	// Light reads as a compaction plans: the entries are built from the stored columns (role,
	// text, name, tool calls), without reading or decoding each message's JSON, so that a large
	// message is held once, as its text. An entry's Message then has role, name, tool calls and
	// tool_call_id, no content or Extra: read its text with Entry.Text.
	Light bool
	// Live reads, for a host that keeps the thread between its turns (memctl serve), the
	// thread's whole history (Active.History) and the version of both (Active.Version) with the
	// active context, in the same snapshot; the entries are read whole (not with Light). The
	// active context's messages that are stored messages shown as stored share their memory
	// with History's. Active only.
	Live bool
}

// readOptions returns the one ReadOptions of a read of thread (none: the zero value); more
// than one, or Live with Light, is an error.
func readOptions(thread string, opts []ReadOptions) (ReadOptions, error) {
	switch {
	case len(opts) == 0:
		return ReadOptions{}, nil
	case len(opts) > 1:
		return ReadOptions{}, fmt.Errorf("read %q: %d ReadOptions given; at most one", thread, len(opts))
	case opts[0].Live && opts[0].Light:
		return ReadOptions{}, fmt.Errorf("read %q: ReadOptions: Live reads the entries whole, not Light", thread)
	}
	return opts[0], nil
}

// Active reads the active context of a thread in one consistent snapshot, its messages whole
// or light (ReadOptions.Light), with the history and version for a host that keeps the thread
// (ReadOptions.Live); at most one ReadOptions. Its cost grows with the active context, not the
// history (with Live: with both). The pinned messages are moved right after the leading
// system messages.
func (s *Store) Active(ctx context.Context, thread string, opt ...ReadOptions) (Active, error) {
	o, err := readOptions(thread, opt)
	if err != nil {
		return Active{}, err
	}
	if o.Live {
		return readTx(ctx, s, func(q db.Querier) (Active, error) { return s.readLive(ctx, q, thread) })
	}
	return readTx(ctx, s, func(q db.Querier) (Active, error) { return s.readActive(ctx, q, thread, o.Light) })
}

func (s *Store) active(ctx context.Context, q db.Querier, thread string) (Active, error) {
	return s.readActive(ctx, q, thread, false)
}

func (s *Store) readActive(ctx context.Context, q db.Querier, thread string, light bool) (Active, error) {
	r, err := q.GetThread(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return Active{}, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	if err != nil {
		return Active{}, err
	}
	a := Active{Thread: threadFromRow(r.ID, r.Model, r.Encoding, r.LastSeq, r.CreatedAt, r.UpdatedAt)}
	a.Thread.Settings = settingsJSON(r.Settings)
	cur, err := q.CurrentCompaction(ctx, thread)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Active{}, err
	}
	after := int64(0)
	if err == nil && cur.View != "" {
		a, err = s.readView(ctx, q, a, cur, light)
		if err != nil {
			return Active{}, err
		}
	} else if err == nil {
		a.Current = cur.ID
		if a.Entries, err = s.messagesBefore(ctx, q, thread, cur.FromSeq.Int64, light); err != nil {
			return Active{}, err
		}
		e := SummaryEntry(cur.ID, cur.SummaryRole.String, cur.Summary.String, int(cur.SummaryTokens), cur.FromSeq.Int64, cur.ToSeq.Int64)
		e.planned = cur.LastSeq
		a.Entries = append(a.Entries, e)
		a.Summary, a.FromSeq, a.ToSeq, a.summaryPlanned = cur.ID, cur.FromSeq.Int64, cur.ToSeq.Int64, cur.LastSeq
		after = cur.ToSeq.Int64
	}
	if cur.View == "" {
		tail, err := s.readRange(ctx, q, a.Thread, after+1, int64(a.Thread.Messages), light)
		if err != nil {
			return Active{}, err
		}
		if a.Entries == nil {
			a.Entries = tail // no copy of a long tail
		} else {
			a.Entries = append(a.Entries, tail...)
		}
	}
	if a.Entries, err = s.withPins(ctx, q, thread, a.Entries, a.summaryPlanned, light); err != nil {
		return Active{}, err
	}
	a.Tokens = PromptTokens(a.Entries)
	a.Thread.ActiveMessages, a.Thread.ActiveTokens = len(a.Entries), a.Tokens
	return a, nil
}

// lightRow is a row of the light message queries: the same columns, under the name sqlc gives
// each query's row.
type lightRow interface {
	db.ListMessageColumnsAfterRow | db.ListMessageColumnsBeforeRow | db.ListMessageColumnsBetweenRow
}

// lightEntries decodes the rows of a light message query of a thread.
func lightEntries[R lightRow](thread string, rows []R) ([]Entry, error) {
	out := make([]Entry, len(rows))
	if err := lightInto(thread, out, rows); err != nil {
		return nil, err
	}
	return out, nil
}

// lightInto decodes the rows of a light message query of a thread into dst, as long as rows.
func lightInto[R lightRow](thread string, dst []Entry, rows []R) error {
	for i, r := range rows {
		var err error
		if dst[i], err = lightEntry(db.ListMessageColumnsAfterRow(r)); err != nil {
			return fmt.Errorf("thread %q: %w", thread, err)
		}
	}
	return nil
}

// messagesBefore and messagesAfter read the messages below or above a seq, whole or light.
func (s *Store) messagesBefore(ctx context.Context, q db.Querier, thread string, before int64, light bool) ([]Entry, error) {
	if !light {
		rows, err := q.ListMessagesBefore(ctx, db.ListMessagesBeforeParams{ThreadID: thread, BeforeSeq: before})
		if err != nil {
			return nil, err
		}
		return entries(rows)
	}
	rows, err := q.ListMessageColumnsBefore(ctx, db.ListMessageColumnsBeforeParams{ThreadID: thread, BeforeSeq: before})
	if err != nil {
		return nil, err
	}
	return lightEntries(thread, rows)
}

func (s *Store) messagesAfter(ctx context.Context, q db.Querier, thread string, after int64, light bool) ([]Entry, error) {
	if !light {
		rows, err := q.ListMessagesAfter(ctx, db.ListMessagesAfterParams{ThreadID: thread, AfterSeq: after})
		if err != nil {
			return nil, err
		}
		return entries(rows)
	}
	rows, err := q.ListMessageColumnsAfter(ctx, db.ListMessageColumnsAfterParams{ThreadID: thread, AfterSeq: after})
	if err != nil {
		return nil, err
	}
	return lightEntries(thread, rows)
}

// lightEntry builds an entry from the stored columns, decoding only the tool calls.
func lightEntry(r db.ListMessageColumnsAfterRow) (Entry, error) {
	// The calls are decoded into a slice of their own: decoding into the entry's field would
	// put every entry on the heap, with tool calls or not.
	var calls []chat.ToolCall
	if r.ToolCalls.Valid {
		var err error
		if calls, err = decodeToolCalls(r.ToolCalls.String); err != nil {
			return Entry{}, fmt.Errorf("message %d: stored tool calls: %w", r.Seq, err)
		}
	}
	return Entry{Seq: r.Seq, Tokens: int(r.Tokens), text: r.Content.String, light: true,
		Message: chat.Message{Role: r.Role, Name: r.Name.String, ToolCallID: r.ToolCallID.String, ToolCalls: calls}}, nil
}

// decodeToolCalls decodes a message's stored tool_calls. Its slice goes to the heap (decoded
// through a pointer) only here: a message without calls allocates none.
func decodeToolCalls(s string) ([]chat.ToolCall, error) {
	var calls []chat.ToolCall
	err := json.Unmarshal([]byte(s), &calls)
	return calls, err
}

func entries(rows []db.Message) ([]Entry, error) {
	out := make([]Entry, len(rows))
	for i, r := range rows {
		// The store's own one-pass decoder (decodeLine, as an append reads a message), on a copy
		// of its own: encoding/json reads a message three times and copies its content twice,
		// which a long tool result pays each time the thread is read.
		m, _, err := decodeLine([]byte(r.Raw), true)
		if err != nil {
			return nil, fmt.Errorf("message %d of thread %q: stored JSON: %w", r.Seq, r.ThreadID, err)
		}
		out[i].Message = m
		out[i].Seq, out[i].Tokens = r.Seq, int(r.Tokens)
	}
	return out, nil
}

// History returns every message of a thread as appended, oldest first.
func (s *Store) History(ctx context.Context, thread string) ([]Entry, error) {
	var out []Entry
	err := s.h.ReadTx(ctx, func(q db.Querier) error {
		if _, err := q.GetThread(ctx, thread); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return err
		}
		rows, err := q.ListMessages(ctx, thread)
		if err != nil {
			return err
		}
		out, err = entries(rows)
		return err
	})
	return out, err
}

// DeleteThread deletes a thread with its whole history, its compaction reports and their
// attempt log.
func (s *Store) DeleteThread(ctx context.Context, thread string) error {
	return s.h.WithTx(ctx, func(q db.Querier) error {
		n, err := q.DeleteThread(ctx, thread)
		if err != nil {
			return fmt.Errorf("delete thread %q: %w", thread, err)
		}
		if n == 0 {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		}
		return nil
	})
}
