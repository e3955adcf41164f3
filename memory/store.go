// Package memory is the store of memcascade: conversations kept as append-only threads in one
// SQLite file or a PostgreSQL database (Store).
//
// A thread's history is never rewritten. Its active context, what the agent sends to its
// model, is derived: the leading system/developer messages and the pinned ones, then the
// current summary (if the thread was compacted), then every message after the range the
// summary covers, as the thread's current view shows them (masked or cut tool results).
//
// It owns every row of threads, messages, pins and compactions; the compaction settings, their
// defaults and their one set of rules (Settings, Settings.Problems, Resolve, the prompt rule);
// the unit rule a plan and a pin share (Cuts, PinnedLen); the views; the reports a compaction
// leaves (Report, Store.Reports, Revert, Coverage); the error codes hosts map (ErrorCode); and
// the clock of the system (Store.Now). It counts tokens with package tokencount and keeps
// messages as package chat defines them.
//
// The compaction engine is package compact: it plans, summarizes and commits through the
// store's Compactions writer. memory never imports compact, nor the provider cascade, config
// or cmd/memctl.
package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// ErrNoMessages: an append or import held no message.
	ErrNoMessages = errors.New("no messages")
	// ErrNewerSchema: the database was written by a newer version.
	ErrNewerSchema = db.ErrNewerSchema
	// ErrOlderSchema: a read-only open found a database written by an older version.
	ErrOlderSchema = db.ErrOlderSchema
	// ErrNoDatabase: an open that may not create found no database at the path.
	ErrNoDatabase = db.ErrNoDatabase
)

// Store is a conversation memory in one SQLite file or one PostgreSQL database. It is safe for
// concurrent use, and several processes may use the same database.
type Store struct {
	// Now is the clock of the whole system: the store's rows, leases and reports, and the
	// attempts and cooldowns of a cascade given to compact.New (see compact.Clocked). It
	// defaults to time.Now; set it with OpenOptions.Now so that the open's cleanup reads it too.
	Now func() time.Time
	// Lease is how long a running compaction's lease lasts (0: DefaultLease); see lease.go.
	Lease time.Duration
	// DefaultModel is the model of a thread created without one (default "gpt-4o").
	DefaultModel string
	// Encoding, when set, is the tokenizer of new threads whatever their model: a built-in
	// encoding (see Encodings) or the Encoding of a counter given to UseCounter.
	Encoding string
	// Logger, when set, receives a warning for each interrupted compaction the store marks
	// failed (keys thread, compaction_id, owner_host, owner_pid). nil: silent.
	Logger *slog.Logger

	h        *db.Handle
	mu       sync.Mutex
	counters map[string]tokencount.Counter
	// indexBatch overrides indexBatchBytes (0: the constant); set by tests (export_test.go).
	indexBatch int
	// batch is the group commit of AppendLive (batch.go).
	batch batcher
}

// Open opens the store at path, creating the file (mode 0600) when missing and migrating an
// older schema. A compaction left running by a process that no longer exists is marked failed
// with the error "interrupted". A file that is not a memcascade database is refused
// (*db.ForeignError) and left byte-identical. path may be a postgres:// URL when the program links
// the PostgreSQL backend in (import _ "github.com/memcascade/memcascade/db/postgres"); without it
// the open fails naming that import (db.ErrNoPostgres).
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, OpenOptions{})
}

// OpenOptions set what opening a store may do to its file.
type OpenOptions struct {
	// NoCreate refuses a missing or empty file (ErrNoDatabase) instead of creating it. An
	// existing database is still migrated.
	NoCreate bool
	// ReadOnly is for a caller that only reads: it implies NoCreate, and the file is never
	// migrated (a database written by an older version is ErrOlderSchema: open it once without
	// ReadOnly to upgrade it) nor marked with the application id.
	ReadOnly bool
	// Logger, when set, becomes the Store's Logger before the open recovers interrupted
	// compactions, so that they are logged. nil: silent.
	Logger *slog.Logger
	// Now, when set, becomes the Store's clock (Store.Now) before the open recovers
	// interrupted compactions, so that the leases are judged by it. nil: time.Now.
	Now func() time.Time
}

// OpenWith opens the store at path as opt says (see Open).
func OpenWith(ctx context.Context, path string, opt OpenOptions) (*Store, error) {
	// The queries are prepared once: appends run InsertMessage once per message.
	h, err := db.OpenHandle(ctx, path, db.Options{NoCreate: opt.NoCreate, ReadOnly: opt.ReadOnly})
	if err != nil {
		return nil, err
	}
	s := &Store{
		Now:          time.Now,
		DefaultModel: "gpt-4o",
		h:            h,
		counters:     map[string]tokencount.Counter{},
		Logger:       opt.Logger,
	}
	if opt.Now != nil {
		s.Now = opt.Now
	}
	if err := s.failInterrupted(ctx); err != nil {
		s.Close()
		return nil, err
	}
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

// Close closes the database.
func (s *Store) Close() error {
	s.stopBatches()
	return s.h.Close()
}

// DB returns the database handle, for the cascade's cooldowns and attempt log.
func (s *Store) DB() *db.Handle { return s.h }

// MakeStorable returns s as the store can keep it (db.MakeStorable, for packages that reach the
// database only through memory, as compact does): each NUL character and each byte that is not
// UTF-8 replaced by U+FFFD.
func MakeStorable(s string) string { return db.MakeStorable(s) }

func (s *Store) now() int64 { return s.Now().UnixMilli() }

// Counter returns the token counter for an encoding, shared by every thread that uses it: the
// counter given to UseCounter for that name, or the built-in one of a built-in encoding. Any
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

// UseCounter makes c the counter of every thread whose encoding is c.Encoding(), and the
// tokenizer of new threads (it sets Encoding). It is how a host brings its own tokenizer, and
// how a vocabulary file (NewFileCounter) is used. Call it before the store is used. A counter
// with a Load() error method (BPECounter) is loaded by the first Counter call that returns it,
// which returns its error. A counter of another type may not take a built-in encoding's name.
func (s *Store) UseCounter(c tokencount.Counter) error {
	if _, builtin := c.(*tokencount.BPECounter); !builtin && tokenizer.Known(c.Encoding()) {
		return fmt.Errorf("use counter: the encoding name %q is a built-in encoding's: name your tokenizer otherwise", c.Encoding())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters[c.Encoding()] = c
	s.Encoding = c.Encoding()
	return nil
}

// newThreadEncoding picks the encoding of a new thread: that of a counter given to UseCounter
// when Encoding names one, else ResolveEncoding's.
func (s *Store) newThreadEncoding(model string) (string, bool, error) {
	s.mu.Lock()
	_, custom := s.counters[s.Encoding]
	s.mu.Unlock()
	if custom && s.Encoding != "" {
		return s.Encoding, true, nil
	}
	return tokencount.ResolveEncoding(model, s.Encoding)
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
	// Settings are the compaction settings stored on the thread (see ThreadSettings); set by
	// Thread and Threads.
	Settings ThreadSettings `json:"settings"`
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
		if t.Settings, err = parseThreadSettings(r.ID, r.Settings); err != nil {
			return nil, err
		}
		if r.Pins > 0 && r.Compactions > 0 {
			// A pin a summary covers is in the active context: the stored counts do not say.
			a, err := s.ActiveLight(ctx, r.ID)
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

	// text is the message's text when the entry was read light (see Store.ActiveLight): its
	// Message then holds role, name, tool calls and tool_call_id, not content or Extra.
	text  string
	light bool
	// mark is set when the entry is shown masked or cut by a compaction's view (see Mark).
	mark *Mark
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
	// Summary is the compaction whose summary is in the context (0: none). It covers the
	// messages FromSeq to ToSeq.
	Summary        int64
	FromSeq, ToSeq int64

	// Current is the thread's current compaction, from whose row the view is derived (0: none).
	// A compaction planned on this context commits only while this is still current.
	Current int64
}

// Messages returns the messages of the active context.
func (a Active) Messages() []chat.Message {
	out := make([]chat.Message, len(a.Entries))
	for i, e := range a.Entries {
		out[i] = e.Message
	}
	return out
}

// Active reads the active context of a thread in one consistent snapshot. Its cost grows with
// the active context, not the history.
func (s *Store) Active(ctx context.Context, thread string) (Active, error) {
	return readTx(ctx, s, func(q db.Querier) (Active, error) { return s.active(ctx, q, thread) })
}

// ActiveLight reads the active context of a thread as a compaction plans on it, in one
// consistent snapshot. The entries are built from the stored columns (role, text, name, tool
// calls), without reading or decoding each message's JSON: their Message has no content or
// Extra, so read their text with Entry.Text. The pinned messages are moved right after the
// leading system messages.
func (s *Store) ActiveLight(ctx context.Context, thread string) (Active, error) {
	return readTx(ctx, s, func(q db.Querier) (Active, error) { return s.readActive(ctx, q, thread, true) })
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
	if a.Thread.Settings, err = parseThreadSettings(r.ID, r.Settings); err != nil {
		return Active{}, err
	}
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
		a.Entries = append(a.Entries, SummaryEntry(cur.ID, cur.SummaryRole.String, cur.Summary.String, int(cur.SummaryTokens), cur.FromSeq.Int64, cur.ToSeq.Int64))
		a.Summary, a.FromSeq, a.ToSeq = cur.ID, cur.FromSeq.Int64, cur.ToSeq.Int64
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
	if a.Entries, err = s.withPins(ctx, q, thread, a.Entries, light); err != nil {
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
		if err := json.Unmarshal([]byte(r.ToolCalls.String), &calls); err != nil {
			return Entry{}, fmt.Errorf("message %d: stored tool calls: %w", r.Seq, err)
		}
	}
	return Entry{Seq: r.Seq, Tokens: int(r.Tokens), text: r.Content.String, light: true,
		Message: chat.Message{Role: r.Role, Name: r.Name.String, ToolCallID: r.ToolCallID.String, ToolCalls: calls}}, nil
}

func entries(rows []db.Message) ([]Entry, error) {
	out := make([]Entry, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal([]byte(r.Raw), &out[i].Message); err != nil {
			return nil, fmt.Errorf("message %d of thread %q: stored JSON: %w", r.Seq, r.ThreadID, err)
		}
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

// SearchHit is a message or summary that matched a search.
type SearchHit struct {
	Thread string `json:"thread"`
	// Seq is the message's place; for a summary, the last message it covers.
	Seq  int64  `json:"seq"`
	Role string `json:"role"`
	// Archived: the message is no longer in the active context (a summary covers it), or the
	// summary was superseded or reverted.
	Archived bool   `json:"archived"`
	Snippet  string `json:"snippet"`
	// CompactionID is set when the hit is a summary.
	CompactionID int64 `json:"compaction_id,omitempty"`
	// Marks are the byte ranges [start, end) in Snippet of the matched text, the brackets
	// around each excluded: a brace in the stored text is never taken for a mark.
	Marks [][2]int `json:"-"`
}

// SearchOptions narrow a search.
type SearchOptions struct {
	Thread string // only this thread ("" = all)
	Limit  int    // at most this many hits (0 = 20)
}

// Search finds stored messages and summaries, archived ones included, that contain every word
// of query. Any text is a valid query: words are matched as quoted phrases, never as FTS5
// syntax; a word ending in * matches the words that start with it (OBUT* finds OBUT9V).
// Message hits come first, best match first, then summary hits.
func (s *Store) Search(ctx context.Context, query string, opt SearchOptions) ([]SearchHit, error) {
	if opt.Limit <= 0 {
		opt.Limit = 20
	}
	match := s.h.Match(query)
	if match == "" {
		return []SearchHit{}, nil
	}
	out := []SearchHit{}
	open, close := snippetMarks()
	err := s.h.ReadTx(ctx, func(q db.Querier) error {
		msgs, err := q.SearchMessages(ctx, db.SearchMessagesParams{MarkOpen: open, MarkClose: close, Query: match, ThreadID: opt.Thread, MaxRows: int64(opt.Limit)})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			snip, marks := markSnippet(m.Snippet, open, close)
			out = append(out, SearchHit{Thread: m.ThreadID, Seq: m.Seq, Role: m.Role, Archived: m.Archived != 0, Snippet: snip, Marks: marks})
		}
		if len(out) >= opt.Limit {
			return nil
		}
		sums, err := q.SearchSummaries(ctx, db.SearchSummariesParams{MarkOpen: open, MarkClose: close, Query: match, ThreadID: opt.Thread, MaxRows: int64(opt.Limit - len(out))})
		if err != nil {
			return err
		}
		for _, m := range sums {
			snip, marks := markSnippet(m.Snippet, open, close)
			out = append(out, SearchHit{Thread: m.ThreadID, Seq: m.ToSeq.Int64, Role: m.SummaryRole.String,
				Archived: m.Superseded != 0, Snippet: snip, Marks: marks, CompactionID: m.ID})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	return out, nil
}

// snippetMarks returns the marks the search asks SQLite to put around matched text: random, so
// that no stored text can contain them.
func snippetMarks() (open, close string) {
	var b [12]byte
	rand.Read(b[:])
	n := hex.EncodeToString(b[:])
	return "\x1f" + n + "(", "\x1f" + n + ")"
}

// markSnippet replaces the marks open and close in a snippet by brackets and returns where the
// marked text is.
func markSnippet(s, open, close string) (string, [][2]int) {
	var b strings.Builder
	var marks [][2]int
	for {
		i := strings.Index(s, open)
		if i < 0 {
			break
		}
		j := strings.Index(s[i+len(open):], close)
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteByte('[')
		start := b.Len()
		b.WriteString(s[i+len(open) : i+len(open)+j])
		marks = append(marks, [2]int{start, b.Len()})
		b.WriteByte(']')
		s = s[i+len(open)+j+len(close):]
	}
	b.WriteString(s)
	return b.String(), marks
}
