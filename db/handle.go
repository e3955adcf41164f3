package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Handle is an open memcascade database of either backend: an SQLite file (this package's
// sqlite_*.go) or a PostgreSQL database (package db/postgres), each registered with Register.
// The store and the cascade reach every query through Querier and every transaction through
// the Handle, so what differs between the backends stays in their own files: sqlite_*.go here,
// and db/postgres.
type Handle struct {
	// DB is the database/sql pool, for what no query of Querier does (tests, tools).
	DB *sql.DB
	// Backend is "sqlite" or "postgres".
	Backend string
	// Name is the file's path, or the PostgreSQL URL without its user and password: what
	// errors and messages may show.
	Name string

	q    Querier // the prepared queries, outside any transaction
	ops  Ops
	once sync.Once
	// writer is held by the writing transaction of this process that runs (Ops.OneWriter).
	writer chan struct{}
	// committed wakes the checkpointer (Ops.Checkpoint), unindexed the indexer (Ops.IndexBatch);
	// stop ends both, and cancel the transaction the indexer runs; done counts them.
	committed, unindexed, stop chan struct{}
	cancel                     context.CancelFunc
	done                       sync.WaitGroup
	// indexAfter is the indexer's clock and indexPassed reports each of its passes (tests
	// replace them: see newHandle).
	indexAfter  func(time.Duration) <-chan time.Time
	indexPassed func(error)
}

// Ops is what a backend gives a Handle besides the database: its queries and its transactions.
type Ops struct {
	// Prepare prepares every query on the pool (nil: none prepared).
	Prepare func(ctx context.Context, sqldb *sql.DB) (Querier, error)
	// Bind returns the queries run inside tx, as prepared ones when q was made by Prepare.
	Bind func(q Querier, tx *sql.Tx) Querier
	// Write and Locked are the options of a writing transaction: Write for one that reads
	// before it writes and must see the database as if alone (PostgreSQL: SERIALIZABLE),
	// Locked for one that first locks the rows it changes (LockThread), so that it may see
	// others' commits after its lock (PostgreSQL: READ COMMITTED). Read is a read-only
	// snapshot.
	Write, Locked, Read *sql.TxOptions
	// Pipelined, when set, runs fn once in a Locked transaction whose statements that
	// return nothing to read are sent with the next one that reads, or with the COMMIT (see
	// AppendTx). nil: AppendTx is LockedTx.
	Pipelined func(ctx context.Context, sqldb *sql.DB, fn func(q Querier) error) error
	// OneWriter makes the writing transactions of this process run one at a time, queued in
	// the order they come, each taking the database's write lock only when the previous one
	// has committed (SQLite: one writer at a time per file; without it, concurrent writers
	// poll the lock with SQLite's growing sleeps, and a turn waited seconds under load).
	OneWriter bool
	// Retryable reports an error after which the whole transaction may pass when run again.
	Retryable func(error) bool
	// Lost reports an error that means the connection to the server was lost (nil: a file,
	// no connection to lose). A transaction that lost it is reported as such (see WithTx).
	Lost func(error) bool
	// Match turns a user's search text into the backend's full-text query: every word
	// required, a word ending in * a prefix, no user text read as query syntax. "" means
	// nothing to search for.
	Match func(text string) string
	// SearchThreadMessages and SearchThreadSummaries, when set, are SearchMessages and
	// SearchSummaries for one thread, ranked among the thread's own rows (SQLite: bm25 weighs
	// a word by the whole index). nil: the queries' ranking of a row does not depend on other
	// rows (PostgreSQL's ts_rank weighs a row by its own text).
	SearchThreadMessages  func(ctx context.Context, q Querier, arg SearchMessagesParams) ([]SearchMessagesRow, error)
	SearchThreadSummaries func(ctx context.Context, q Querier, arg SearchSummariesParams) ([]SearchSummariesRow, error)
	// Pending and IndexBatch, when set, index new messages for search after the commits that
	// append them (SQLite): Pending returns the number of messages committed and not indexed;
	// IndexBatch indexes a bounded batch of them in tx, a write transaction, and reports
	// whether more may be left. The Handle runs them on a goroutine of its own a while after
	// appends commit, and in IndexPending. nil: the backend indexes a message as it commits it
	// (PostgreSQL's GIN index).
	Pending    func(ctx context.Context, sqldb *sql.DB) (int64, error)
	IndexBatch func(ctx context.Context, tx *sql.Tx) (more bool, err error)
	// noIndexer: no goroutine indexes (a read-only open, Options.NoIndexer); IndexPending
	// still does.
	noIndexer bool
	// Close releases the prepared queries.
	Close func(q Querier) error
	// Checkpoint, when set, moves what writers committed from the write-ahead log into the
	// database. The Handle runs it on a goroutine of its own, a while after commits, so that
	// no writer pays for it (SQLite's own checkpoint runs in the commit that fills the log:
	// a turn of memctl serve then took 15 ms, not 1.5). nil: the backend does it itself.
	Checkpoint func(ctx context.Context, sqldb *sql.DB) error
	// Housekeeping the backend does its own way; nil: refused with ErrUnsupported.
	Backup func(ctx context.Context, sqldb *sql.DB, path string) error
	Vacuum func(ctx context.Context, sqldb *sql.DB) error
	Check  func(ctx context.Context, sqldb *sql.DB) error
	// Size is the bytes the database takes: an SQLite file with its write-ahead log, the
	// tables and indexes of a PostgreSQL schema.
	Size func(ctx context.Context, sqldb *sql.DB, name string) (int64, error)
	// Identity names the database the pool reaches, the same however its URL is spelled (nil:
	// a file, compared by os.SameFile).
	Identity func(ctx context.Context, sqldb *sql.DB) (string, error)
}

// NewHandle makes a Handle of an open pool and its backend's operations, preparing its queries.
func NewHandle(ctx context.Context, sqldb *sql.DB, backend, name string, ops Ops) (*Handle, error) {
	return newHandle(ctx, sqldb, backend, name, ops, time.After, func(error) {})
}

// newHandle is NewHandle with the indexer's clock and report of its passes.
func newHandle(ctx context.Context, sqldb *sql.DB, backend, name string, ops Ops, after func(time.Duration) <-chan time.Time, passed func(error)) (*Handle, error) {
	h := &Handle{DB: sqldb, Backend: backend, Name: name, ops: ops, writer: make(chan struct{}, 1), indexAfter: after, indexPassed: passed}
	q, err := ops.Prepare(ctx, sqldb)
	if err != nil {
		return nil, fmt.Errorf("open database %s: prepare queries: %w", name, err)
	}
	h.q = q
	h.stop = make(chan struct{})
	if ops.Checkpoint != nil {
		h.committed = make(chan struct{}, 1)
		h.done.Add(1)
		go h.checkpointer()
	}
	if ops.IndexBatch != nil && !ops.noIndexer {
		// Woken at once: messages a process committed before it ended without indexing them
		// are indexed now.
		h.unindexed = make(chan struct{}, 1)
		h.unindexed <- struct{}{}
		var ictx context.Context
		ictx, h.cancel = context.WithCancel(context.Background())
		h.done.Add(1)
		go h.indexer(ictx)
	}
	return h, nil
}

// checkpointDelay is how long after a commit the checkpointer runs: the commits of a burst
// (the turns of many agents) make one checkpoint.
const checkpointDelay = 250 * time.Millisecond

// checkpointer runs Ops.Checkpoint a while after commits, until Close. A checkpoint that
// fails (the database closed under it) or cannot finish (a reader holds the log) is tried
// again after the next commit; the last connection to close checkpoints what is left.
func (h *Handle) checkpointer() {
	defer h.done.Done()
	for {
		select {
		case <-h.stop:
			return
		case <-h.committed:
		}
		select {
		case <-h.stop:
			return
		case <-time.After(checkpointDelay):
		}
		_ = h.ops.Checkpoint(context.Background(), h.DB)
	}
}

// indexDelay is how long after a commit the indexer runs: the appends of a burst (the turns
// of many agents) are indexed together, in one transaction per ftsBatch messages.
const indexDelay = 200 * time.Millisecond

// indexer indexes the messages committed but not yet indexed (Ops.IndexBatch) a while after
// commits, until Close. A batch that fails (the database closed under it, ctx cancelled) is
// tried again after the next commit; IndexPending indexes what is left before a search.
func (h *Handle) indexer(ctx context.Context) {
	defer h.done.Done()
	for {
		select {
		case <-h.stop:
			return
		case <-h.unindexed:
		}
		select {
		case <-h.stop:
			return
		case <-h.indexAfter(indexDelay):
		}
		// This pass indexes what the commits of the delay wrote: they need no other.
		select {
		case <-h.unindexed:
		default:
		}
		h.indexPassed(h.indexPending(ctx, func() bool {
			select {
			case <-h.stop:
				return true
			default:
				return false
			}
		}))
	}
}

// IndexPending indexes for search every message committed (by this process or another) that
// is not indexed yet, in bounded batches, each a write transaction of its own queued with the
// others (see Ops.IndexBatch); a search runs it first, so it finds every message committed
// before it began. It writes nothing when nothing is left to index, and does nothing on a
// backend that indexes as it commits. When it cannot (a file it may not write), the error says
// how many messages are not indexed.
func (h *Handle) IndexPending(ctx context.Context) error {
	err := h.indexPending(ctx, func() bool { return false })
	if err == nil {
		return nil
	}
	if n, perr := h.ops.Pending(ctx, h.DB); perr == nil {
		return fmt.Errorf("%d messages of %s are not indexed for search yet, and indexing them failed: %w", n, h.Name, err)
	}
	return fmt.Errorf("index new messages of %s for search: %w", h.Name, err)
}

// Checkpoint moves what writers committed from the write-ahead log into the database now, as
// the Handle's checkpointer does a while after commits (Ops.Checkpoint); nothing on a backend
// that does it itself. A benchmark that times work right after a large write runs it first,
// so that the checkpointer's work on that write does not run inside the time it measures.
func (h *Handle) Checkpoint(ctx context.Context) error {
	if h.ops.Checkpoint == nil {
		return nil
	}
	return h.ops.Checkpoint(ctx, h.DB)
}

func (h *Handle) indexPending(ctx context.Context, stop func() bool) error {
	if h.ops.IndexBatch == nil {
		return nil
	}
	pending, err := h.ops.Pending(ctx, h.DB)
	if err != nil || pending == 0 {
		return err
	}
	for !stop() {
		var more bool
		err := h.writeTx(ctx, false, func(tx *sql.Tx) error {
			var err error
			more, err = h.ops.IndexBatch(ctx, tx)
			return err
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// wrote tells the checkpointer that a write transaction committed, and the indexer when it may
// have appended messages (index).
func (h *Handle) wrote(index bool) {
	for _, c := range []chan struct{}{h.committed, h.unindexed} {
		if c == nil || (!index && c == h.unindexed) {
			continue
		}
		select {
		case c <- struct{}{}:
		default: // already told
		}
	}
}

// Q returns the queries run outside any transaction.
func (h *Handle) Q() Querier { return h.q }

// WithTx runs fn in a write transaction and commits it. What fn reads and writes is as if no
// other writer ran meanwhile (SQLite: BEGIN IMMEDIATE; PostgreSQL: SERIALIZABLE). When the
// backend reports a conflict (SQLite busy, a PostgreSQL serialization failure or deadlock),
// the whole transaction is run again with a growing pause until ctx ends: fn may only write
// through q.
//
// A transaction whose connection to the server is lost is never run again: the error says
// so, and whether nothing was committed (lost before the COMMIT: the server rolled it back)
// or the transaction may have been committed (lost during the COMMIT: its answer never came).
func (h *Handle) WithTx(ctx context.Context, fn func(q Querier) error) error {
	return h.run(ctx, h.ops.Write, fn)
}

// LockedTx is WithTx for a transaction whose first statement locks the rows it changes
// (LockThread): on PostgreSQL it runs at READ COMMITTED, so writers of one row queue on its
// lock instead of failing and retrying. On SQLite it is WithTx.
func (h *Handle) LockedTx(ctx context.Context, fn func(q Querier) error) error {
	return h.run(ctx, h.ops.Locked, fn)
}

// AppendTx is LockedTx for an append: a transaction that locks the thread, writes its
// messages and its tail, and reads what it needs back. On a backend that pipelines
// (Ops.Pipelined: PostgreSQL) the writes are not sent one round trip each, but with the next
// statement sent that reads or with the COMMIT (the thread's version, read with its lock, is
// not sent again: see db/postgres): a write's error is then returned by that statement (and
// the transaction is rolled back all the same), so fn must not go on to anything but its
// transaction's statements after a write. Retried as LockedTx is.
func (h *Handle) AppendTx(ctx context.Context, fn func(q Querier) error) error {
	if h.ops.Pipelined == nil {
		return h.LockedTx(ctx, fn)
	}
	return h.lost(Retry(ctx, h.ops.Retryable, func() error { return h.ops.Pipelined(ctx, h.DB, fn) }))
}

// ReadTx runs fn in a read-only transaction: one consistent snapshot.
func (h *Handle) ReadTx(ctx context.Context, fn func(q Querier) error) error {
	return h.run(ctx, h.ops.Read, fn)
}

func (h *Handle) run(ctx context.Context, opts *sql.TxOptions, fn func(q Querier) error) error {
	return h.runTx(ctx, opts, func(tx *sql.Tx) error { return fn(h.ops.Bind(h.q, tx)) })
}

// runTx runs fn in a transaction begun with opts (see WithTx), queued behind this process's
// other writers when the backend has one writer (Ops.OneWriter).
func (h *Handle) runTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	if opts == h.ops.Read {
		return h.lost(RunTx(ctx, h.DB, opts, h.ops.Retryable, fn))
	}
	return h.writeTx(ctx, true, func(tx *sql.Tx) error { return fn(tx) }, opts)
}

// writeTx runs fn in a write transaction (opts: ops.Write when none), queued behind this
// process's other writers when the backend has one writer (Ops.OneWriter); index: it may have
// appended messages, for the indexer to index.
func (h *Handle) writeTx(ctx context.Context, index bool, fn func(tx *sql.Tx) error, opts ...*sql.TxOptions) error {
	o := h.ops.Write
	if len(opts) > 0 {
		o = opts[0]
	}
	if h.ops.OneWriter {
		select {
		case h.writer <- struct{}{}:
			defer func() { <-h.writer }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := h.lost(RunTx(ctx, h.DB, o, h.ops.Retryable, fn))
	if err == nil {
		h.wrote(index)
	}
	return err
}

// lost words err of a transaction whose connection to the server was lost (*LostError).
func (h *Handle) lost(err error) error {
	if err == nil || h.ops.Lost == nil || !h.ops.Lost(err) {
		return err
	}
	le := &LostError{Name: h.Name, Err: err}
	if ce := (*CommitError)(nil); errors.As(err, &ce) {
		le.Committing, le.Err = true, ce.Err
	}
	return le
}

// LostError is the error of a transaction whose connection to the server was lost. Before
// the COMMIT, the server rolled the transaction back; during it (Committing), the transaction
// may have been committed or not.
type LostError struct {
	Name       string // the database, as Display shows it
	Committing bool
	Err        error
}

func (e *LostError) Error() string {
	if e.Committing {
		return fmt.Sprintf("connection to database %s lost during COMMIT: the transaction may have been committed or not (look before running it again): %v", e.Name, e.Err)
	}
	return fmt.Sprintf("connection to database %s lost: nothing of this transaction was committed: %v", e.Name, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// CommitUnknown reports whether err is that of a transaction that lost its connection during
// its COMMIT: whether it was committed is not known.
func CommitUnknown(err error) bool {
	var le *LostError
	return errors.As(err, &le) && le.Committing
}

// Match turns search text into the full-text query of SearchMessages and SearchSummaries
// ("" when the text has no word to search for).
func (h *Handle) Match(text string) string { return h.ops.Match(text) }

// SearchMessages runs q.SearchMessages; one thread's (arg.ThreadID set) is ranked among the
// thread's own messages, at the cost of the thread's text whatever else the database holds.
func (h *Handle) SearchMessages(ctx context.Context, q Querier, arg SearchMessagesParams) ([]SearchMessagesRow, error) {
	if arg.ThreadID != "" && h.ops.SearchThreadMessages != nil {
		return h.ops.SearchThreadMessages(ctx, q, arg)
	}
	return q.SearchMessages(ctx, arg)
}

// SearchSummaries runs q.SearchSummaries; one thread's is ranked among the thread's own
// summaries, as SearchMessages.
func (h *Handle) SearchSummaries(ctx context.Context, q Querier, arg SearchSummariesParams) ([]SearchSummariesRow, error) {
	if arg.ThreadID != "" && h.ops.SearchThreadSummaries != nil {
		return h.ops.SearchThreadSummaries(ctx, q, arg)
	}
	return q.SearchSummaries(ctx, arg)
}

// Backup writes a consistent copy of the database to the file at path, mode 0600 (SQLite
// only), while other writers keep writing: every transaction committed before it started is in
// the copy. An existing path is refused with ErrBackupExists.
func (h *Handle) Backup(ctx context.Context, path string) error {
	if h.ops.Backup == nil {
		return fmt.Errorf("backup: %w (%s): use the server's own tools (pg_dump), or memctl copy to an SQLite file", ErrUnsupported, h.Backend)
	}
	return h.ops.Backup(ctx, h.DB, path)
}

// Vacuum gives the space of deleted rows back (memory's Store.Prune deletes them): SQLite
// rebuilds the file, PostgreSQL vacuums the tables.
func (h *Handle) Vacuum(ctx context.Context) error {
	if h.ops.Vacuum == nil {
		return fmt.Errorf("vacuum: %w (%s)", ErrUnsupported, h.Backend)
	}
	return h.ops.Vacuum(ctx, h.DB)
}

// Check verifies the database: SQLite's integrity check, the foreign keys and both full-text
// indexes. nil means intact; the error names what is wrong. The messages not indexed yet are
// indexed first (IndexPending): the index is checked against every message.
func (h *Handle) Check(ctx context.Context) error {
	if h.ops.Check == nil {
		return fmt.Errorf("check: %w (%s)", ErrUnsupported, h.Backend)
	}
	if err := h.IndexPending(ctx); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return h.ops.Check(ctx, h.DB)
}

// Size returns the bytes the database takes (see Ops.Size): an SQLite file with its
// write-ahead log, or the tables and indexes of a PostgreSQL schema.
func (h *Handle) Size(ctx context.Context) (int64, error) { return h.ops.Size(ctx, h.DB, h.Name) }

// Same reports whether h and o are one database: one SQLite file, whatever the path that names
// it (symlinks, ./, ..), or one PostgreSQL database and schema, whatever the spelling of the URL.
func (h *Handle) Same(ctx context.Context, o *Handle) (bool, error) {
	if h.Backend != o.Backend {
		return false, nil
	}
	if h.ops.Identity == nil {
		a, errA := os.Stat(h.Name)
		b, errB := os.Stat(o.Name)
		return errA == nil && errB == nil && os.SameFile(a, b), nil
	}
	a, err := h.ops.Identity(ctx, h.DB)
	if err != nil {
		return false, fmt.Errorf("identify database %s: %w", h.Name, err)
	}
	b, err := o.ops.Identity(ctx, o.DB)
	if err != nil {
		return false, fmt.Errorf("identify database %s: %w", o.Name, err)
	}
	return a == b, nil
}

// Close releases the prepared queries and closes the pool.
func (h *Handle) Close() error {
	var err error
	h.once.Do(func() {
		if h.stop != nil {
			close(h.stop)
			if h.cancel != nil {
				h.cancel()
			}
			h.done.Wait()
		}
		if h.ops.Close != nil {
			err = h.ops.Close(h.q)
		}
		err = errors.Join(err, h.DB.Close())
	})
	return err
}

// Opener opens the database a name names (see Register).
type Opener func(ctx context.Context, name string, opt Options) (*Handle, error)

// Files is the scheme of the names that are not URLs: the paths of SQLite files.
const Files = ""

var openers = map[string]Opener{}

// Register makes OpenHandle open the names of scheme with open: a URL scheme (as "postgres"),
// or Files for file paths. Each backend registers itself when a program links it in: this
// package registers Files for SQLite (always linked), db/postgres postgres and postgresql
// (memctl links it unless built with -tags nopostgres; a library program imports it itself);
// without it, a postgres:// URL is ErrNoPostgres.
func Register(scheme string, open Opener) { openers[scheme] = open }

// URLScheme returns the scheme of name when name is a database URL ("postgres" for
// postgres://...), "" when it is a file path.
func URLScheme(name string) string {
	scheme, _, ok := strings.Cut(name, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, `/\.:`) {
		return ""
	}
	return strings.ToLower(scheme)
}

// Display returns name as messages may show it: a file path as it is; a URL without its user,
// password and parameters (scheme://host:port/database). A URL whose user or password holds a
// '/', '?' or '#' not percent-encoded (an '@' after the host) shows only what follows its last
// '@': everything before may be the password.
func Display(name string) string {
	scheme := URLScheme(name)
	if scheme == "" {
		return name
	}
	u, err := url.Parse(name)
	if err != nil || strings.Contains(u.Path, "@") || strings.Contains(u.Fragment, "@") || queryKeyHasAt(u.RawQuery) {
		_, rest, _ := strings.Cut(name, "://")
		rest = rest[strings.LastIndex(rest, "@")+1:]
		if u, err = url.Parse(scheme + "://" + rest); err != nil {
			return scheme + "://(unparsable URL)"
		}
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// queryKeyHasAt reports whether a parameter's name holds '@' (as in u:12?34@host: the password
// cut at its '?').
func queryKeyHasAt(query string) bool {
	for kv := range strings.SplitSeq(query, "&") {
		if k, _, _ := strings.Cut(kv, "="); strings.Contains(k, "@") {
			return true
		}
	}
	return false
}

// OpenHandle opens the database name names: a URL of a registered scheme (postgres://...),
// or the path of an SQLite file (Files, registered by this package's init).
func OpenHandle(ctx context.Context, name string, opt Options) (*Handle, error) {
	scheme := URLScheme(name)
	open, ok := openers[scheme]
	switch {
	case ok:
		return open(ctx, name, opt)
	case scheme == "postgres" || scheme == "postgresql":
		return nil, fmt.Errorf("open database %s: %w", Display(name), ErrNoPostgres)
	}
	return nil, fmt.Errorf("open database: unknown URL scheme %q (want an SQLite file path or postgres://...)", scheme)
}

// Storable reports whether text holds only what both backends store: no NUL character (which
// PostgreSQL's text cannot hold) and valid UTF-8.
func Storable(s string) bool { return !strings.ContainsRune(s, 0) && utf8.ValidString(s) }

// MakeStorable returns s with each NUL character and each byte that is not UTF-8 replaced by
// U+FFFD (see Storable).
func MakeStorable(s string) string {
	if Storable(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// SearchTerm is a word of search text: Prefix when it ended in * (the * removed).
type SearchTerm struct {
	Word   string
	Prefix bool
}

// SearchTerms splits search text into the words both backends search for: separated by white
// space or NUL (which neither stores), each ending in * a prefix; words with no letter or digit
// match nothing a tokenizer indexes and are dropped.
func SearchTerms(text string) []SearchTerm {
	var out []SearchTerm
	for w := range strings.FieldsFuncSeq(text, func(r rune) bool { return r == 0 || unicode.IsSpace(r) }) {
		word := strings.TrimRight(w, "*")
		if !strings.ContainsFunc(word, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		out = append(out, SearchTerm{Word: word, Prefix: word != w})
	}
	return out
}

// Batch runs fns in one write transaction (as LockedTx), each within a savepoint of its own:
// a function that fails has what it wrote rolled back and its error in errs, and the others
// commit with the transaction. An error of the transaction itself (its begin, its commit, or
// a function's error the backend may pass when run again, which runs them all again) is err,
// and then nothing of any function was committed. Group commit: writes of concurrent callers
// made one transaction, one commit. finish, if not nil, runs after the functions, in the
// transaction but in no savepoint, given their errors: its error is the transaction's.
func (h *Handle) Batch(ctx context.Context, fns []func(q Querier) error, finish func(q Querier, errs []error) error) (errs []error, err error) {
	err = h.runTx(ctx, h.ops.Locked, func(tx *sql.Tx) error {
		q := h.ops.Bind(h.q, tx)
		errs = make([]error, len(fns))
		for i, fn := range fns {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT batch_item"); err != nil {
				return err
			}
			if errs[i] = fn(q); errs[i] != nil {
				if h.ops.Retryable(errs[i]) || errors.Is(errs[i], ErrRetry) {
					return errs[i]
				}
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT batch_item"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT batch_item"); err != nil {
				return err
			}
		}
		if finish != nil {
			return finish(q, errs)
		}
		return nil
	})
	return errs, err
}

// OneWriter reports whether the writing transactions of this process run one at a time
// (Ops.OneWriter: SQLite).
func (h *Handle) OneWriter() bool { return h.ops.OneWriter }
