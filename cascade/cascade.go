// Package cascade sends chat completions through a cascade of providers tried in order: any
// OpenAI-compatible endpoint (OpenAI), the built-in offline summarizer (package extractive),
// and a scriptable Fake for tests. A provider that fails is retried within its max_attempts with
// exponential backoff, then put on a cooldown stored in SQLite, so every process using the
// database file, and every restart, skips it until the cooldown ends. Every attempt, skips
// included, is logged in the database with a redacted error text.
//
// The package knows nothing about compaction: a caller hands Run an llm.Task, which talks to
// one provider at a time through an llm.Completer.
package cascade

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/llm"
)

// Defaults used where a Cascade or Entry field is zero.
const (
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultCooldown       = 30 * time.Second
	DefaultMaxCooldown    = time.Hour
)

// Attempt outcomes, as stored in cascade_attempts.outcome.
const (
	OutcomeOK              = "ok"
	OutcomeError           = "error"
	OutcomeSkippedCooldown = "skipped_cooldown"
)

// Event kinds reported to Cascade.Observe.
const (
	EventTry   = "try"   // attempt Attempt of MaxAttempts starts
	EventRetry = "retry" // attempt Attempt failed (Class, Err); the next one follows after Wait
	EventWait  = "wait"  // the pause of Wait before attempt Attempt starts
	EventSkip  = "skip"  // the provider is cooling down until CoolingUntil; no request sent
	EventFail  = "fail"  // the provider gave up (Class, Err); CoolingUntil is set when it cools down
	EventOK    = "ok"    // the provider produced the result
)

// maxErrorText bounds the error texts stored and returned, in bytes.
const maxErrorText = 1000

// dbWriteTimeout bounds the log and cooldown writes, which outlive a canceled caller so that
// the attempt that was interrupted is still recorded.
const dbWriteTimeout = 10 * time.Second

// Provider sends one chat completion request, no retries.
type Provider interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

// Entry is one rung of the cascade: a provider and its settings.
type Entry struct {
	Name     string // unique; the key of the provider's cooldown state
	Type     string // "openai", "extractive", "fake"...: for display
	Model    string
	BaseURL  string // for display ("" for extractive)
	Provider Provider

	ContextWindow   int // tokens the provider accepts; 0: unknown
	MaxOutputTokens int

	// MaxAttempts is the number of attempts within one turn; values below 1 mean 1.
	MaxAttempts int
	// Cooldown is the first cooldown; it doubles with each consecutive failure up to
	// MaxCooldown. Zero means DefaultCooldown and DefaultMaxCooldown.
	Cooldown, MaxCooldown time.Duration
}

func (e *Entry) maxAttempts() int { return max(e.MaxAttempts, 1) }

// cooldownFor is max(retryAfter, Cooldown × 2^(failures−1)), capped at MaxCooldown.
func (e *Entry) cooldownFor(failures int64, retryAfter time.Duration) time.Duration {
	base, ceiling := e.Cooldown, e.MaxCooldown
	if base <= 0 {
		base = DefaultCooldown
	}
	if ceiling <= 0 {
		ceiling = DefaultMaxCooldown
	}
	d := base
	for i := int64(1); i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(max(d, retryAfter), ceiling)
}

func (e *Entry) target() llm.Target {
	return llm.Target{Name: e.Name, Model: e.Model, ContextWindow: e.ContextWindow, MaxOutputTokens: e.MaxOutputTokens}
}

// Event reports progress, for example for a CLI to print "local: server error (HTTP 503),
// retry 2/3 in 1.2s". Err is redacted.
type Event struct {
	Provider     string        // the entry's name
	Kind         string        // one of the Event* constants
	Attempt      int           // try, retry, wait: the attempt's number, from 1
	MaxAttempts  int           // try, retry, wait: the entry's max attempts
	Wait         time.Duration // retry, wait: the pause before the next attempt
	Class        string        // retry, fail: the failure's class
	HTTPStatus   int           // retry, fail: the response's status (0: none)
	Err          string        // retry, skip, fail: what went wrong, redacted
	CoolingUntil time.Time     // skip, and fail when the provider now cools down
}

// Cascade tries its entries in order. Create it with New; change the exported fields before
// the first Run. A Cascade is safe for concurrent use once configured.
type Cascade struct {
	Entries []Entry
	// AttemptTimeout bounds one provider's whole turn, retries and waits included; 0: none.
	AttemptTimeout time.Duration
	// Now is the clock of cooldowns and of the attempts' start times. Default time.Now.
	Now func() time.Time
	// Sleep waits between attempts; it returns ctx.Err() when ctx ends first. Default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// InitialBackoff and MaxBackoff shape the exponential backoff (with jitter) between
	// attempts. Defaults DefaultInitialBackoff and DefaultMaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// Redact is applied to every error text stored, reported or returned. Default: the
	// built-in patterns of package redact.
	Redact func(string) string
	// Observe, when set, receives progress events, synchronously, from the goroutine
	// running Run.
	Observe func(Event)

	db *sql.DB
}

// New returns a cascade of entries that keeps its cooldowns and attempt log in sqldb.
func New(sqldb *sql.DB, entries ...Entry) *Cascade {
	return &Cascade{
		Entries:        entries,
		Now:            time.Now,
		Sleep:          sleep,
		InitialBackoff: DefaultInitialBackoff,
		MaxBackoff:     DefaultMaxBackoff,
		Redact:         defaultRedact(),
		db:             sqldb,
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Cascade) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cascade) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}

// clean redacts s and bounds its length.
func (c *Cascade) clean(s string) string {
	if c.Redact != nil {
		s = c.Redact(s)
	} else {
		s = defaultRedact()(s)
	}
	return truncate(s, maxErrorText)
}

func (c *Cascade) emit(ev Event) {
	if c.Observe != nil {
		c.Observe(ev)
	}
}

func (c *Cascade) newBackoff() *backoff.ExponentialBackOff {
	initial, ceiling := c.InitialBackoff, c.MaxBackoff
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if ceiling <= 0 {
		ceiling = DefaultMaxBackoff
	}
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(initial),
		backoff.WithMaxInterval(ceiling),
		backoff.WithMaxElapsedTime(0), // the attempt budget is AttemptTimeout, checked by the caller
	)
}

// Complete is Run with a task that sends req once (through the retrying Completer) and
// returns the completion's text.
func (c *Cascade) Complete(ctx context.Context, compactionID int64, req llm.Request) (llm.Result, error) {
	return c.Run(ctx, compactionID, func(ctx context.Context, _ llm.Target, k llm.Completer) (string, error) {
		resp, err := k.Complete(ctx, req)
		return resp.Text, err
	})
}

// Run tries task against each provider in order until one succeeds; compactionID (0 = none)
// links the attempt rows to a compaction.
//
// A provider cooling down is skipped without a request (and the skip is logged). Otherwise
// task runs under AttemptTimeout with a Completer bound to that provider. When the task
// fails, the provider's failure class is that of the *ProviderError its error wraps, else
// Classify's class of the error, else the class of the last failed attempt; the provider is
// then put on cooldown unless the class is context_length or canceled, and the next one is
// tried. A task that returns an empty text has failed with bad_response. A success resets
// the provider's cooldown.
//
// When no provider succeeds Run returns an *Error wrapping every provider's cause. When the
// caller's ctx ends, Run returns at once (class canceled, no cooldown, no further provider)
// with an *Error that also satisfies errors.Is(err, ctx.Err()). A database failure is
// returned as is.
func (c *Cascade) Run(ctx context.Context, compactionID int64, task llm.Task) (llm.Result, error) {
	var causes []*ProviderError
	for i := range c.Entries {
		e := &c.Entries[i]
		if err := ctx.Err(); err != nil {
			pe := &ProviderError{Provider: e.Name, Model: e.Model, Class: ClassCanceled, Err: err, redact: c.clean}
			return llm.Result{}, &Error{Causes: append(causes, pe)}
		}
		row, err := c.cooldownRow(ctx, e.Name)
		if err != nil {
			if ctx.Err() != nil {
				pe := &ProviderError{Provider: e.Name, Model: e.Model, Class: ClassCanceled, Err: ctx.Err(), redact: c.clean}
				return llm.Result{}, &Error{Causes: append(causes, pe)}
			}
			return llm.Result{}, fmt.Errorf("cascade: read cooldown of %s: %w", e.Name, err)
		}
		if until := time.UnixMilli(row.CoolingUntil); row.CoolingUntil > c.now().UnixMilli() {
			pe, err := c.skip(ctx, compactionID, e, row, until)
			if err != nil {
				return llm.Result{}, err
			}
			causes = append(causes, pe)
			continue
		}

		text, pe, err := c.turn(ctx, compactionID, e, task)
		if err != nil {
			return llm.Result{}, err
		}
		if pe == nil {
			if err := c.reset(ctx, e.Name, row); err != nil {
				return llm.Result{}, err
			}
			c.emit(Event{Provider: e.Name, Kind: EventOK})
			return llm.Result{Text: text, Provider: e.Name, Model: e.Model}, nil
		}
		causes = append(causes, pe)
		ev := Event{Provider: e.Name, Kind: EventFail, Class: pe.Class, HTTPStatus: pe.HTTPStatus, Err: pe.detail()}
		if pe.Class == ClassCanceled && ctx.Err() != nil {
			c.emit(ev)
			return llm.Result{}, &Error{Causes: causes}
		}
		if coolsDown(pe.Class) {
			until, err := c.recordFailure(ctx, e, pe)
			if err != nil {
				return llm.Result{}, err
			}
			ev.CoolingUntil = until
		}
		c.emit(ev)
	}
	return llm.Result{}, &Error{Causes: causes}
}

// turn runs task against one provider. It returns the text, or the provider's failure, or a
// database error that ends the cascade.
func (c *Cascade) turn(ctx context.Context, compactionID int64, e *Entry, task llm.Task) (string, *ProviderError, error) {
	turnCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.AttemptTimeout > 0 {
		turnCtx, cancel = context.WithTimeout(ctx, c.AttemptTimeout)
	}
	defer cancel()
	k := &completer{c: c, e: e, compactionID: compactionID, caller: ctx, turn: turnCtx}
	text, err := task(turnCtx, e.target(), k)
	if dbErr := k.dbError(); dbErr != nil {
		return "", nil, dbErr
	}
	if err == nil {
		if strings.TrimSpace(text) != "" {
			return text, nil, nil
		}
		err = fmt.Errorf("%w: the task returned an empty text", llm.ErrBadResponse)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		cp := *pe
		return "", k.refine(&cp), nil
	}
	class, status, retryAfter := Classify(err)
	if last := k.lastFailure(); class == "" && last != nil {
		class, status, retryAfter = last.Class, last.HTTPStatus, last.RetryAfter
	}
	return "", k.refine(&ProviderError{Class: class, HTTPStatus: status, RetryAfter: retryAfter, Err: err}), nil
}

// skip logs and reports a provider cooling down.
func (c *Cascade) skip(ctx context.Context, compactionID int64, e *Entry, row db.ProviderCooldown, until time.Time) (*ProviderError, error) {
	cause := fmt.Errorf("%w until %s", ErrCoolingDown, until.UTC().Format(time.RFC3339))
	if row.ConsecutiveFailures > 0 {
		cause = fmt.Errorf("%w after %d consecutive failures (last: %s)", cause, row.ConsecutiveFailures, row.LastError)
	}
	pe := &ProviderError{Provider: e.Name, Model: e.Model, Err: cause, redact: c.clean}
	err := c.write(ctx, func(q *db.Queries, wctx context.Context) error {
		_, err := q.InsertAttempt(wctx, db.InsertAttemptParams{
			CompactionID: nullID(compactionID),
			Provider:     e.Name,
			Model:        e.Model,
			StartedAt:    c.now().UnixMilli(),
			Outcome:      OutcomeSkippedCooldown,
			Error:        pe.detail(),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cascade: record skip of %s: %w", e.Name, err)
	}
	c.emit(Event{Provider: e.Name, Kind: EventSkip, Err: pe.detail(), CoolingUntil: until})
	return pe, nil
}

// cooldownRow reads a provider's cooldown state; a provider never seen has the zero row.
func (c *Cascade) cooldownRow(ctx context.Context, name string) (db.ProviderCooldown, error) {
	row, err := db.New(c.db).GetCooldown(ctx, name)
	if errors.Is(err, sql.ErrNoRows) {
		return db.ProviderCooldown{Provider: name}, nil
	}
	return row, err
}

// recordFailure counts a failure and sets the cooldown, in one transaction so that two
// processes failing at once both count. It returns the end of the cooldown.
func (c *Cascade) recordFailure(ctx context.Context, e *Entry, pe *ProviderError) (time.Time, error) {
	var until time.Time
	err := c.write(ctx, func(q *db.Queries, wctx context.Context) error {
		row, err := q.GetCooldown(wctx, e.Name)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		failures := row.ConsecutiveFailures + 1
		now := c.now()
		until = now.Add(e.cooldownFor(failures, pe.RetryAfter))
		return q.UpsertCooldown(wctx, db.UpsertCooldownParams{
			Provider:            e.Name,
			CoolingUntil:        until.UnixMilli(),
			ConsecutiveFailures: failures,
			LastError:           pe.detail(),
			UpdatedAt:           now.UnixMilli(),
		})
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("cascade: record cooldown of %s: %w", e.Name, err)
	}
	return until, nil
}

// reset clears a provider's cooldown state after a success. read is the row read before the
// turn; when it and a fresh read are clear there is nothing to write.
func (c *Cascade) reset(ctx context.Context, name string, read db.ProviderCooldown) error {
	if read.ConsecutiveFailures == 0 && read.CoolingUntil == 0 {
		fresh, err := c.cooldownRow(ctx, name)
		if err == nil && fresh.ConsecutiveFailures == 0 && fresh.CoolingUntil == 0 {
			return nil
		}
	}
	err := c.write(ctx, func(q *db.Queries, wctx context.Context) error {
		return q.UpsertCooldown(wctx, db.UpsertCooldownParams{Provider: name, UpdatedAt: c.now().UnixMilli()})
	})
	if err != nil {
		return fmt.Errorf("cascade: reset cooldown of %s: %w", name, err)
	}
	return nil
}

// write runs fn in a write transaction. It outlives the caller's cancellation (bounded by
// dbWriteTimeout): an interrupted attempt is still logged.
func (c *Cascade) write(ctx context.Context, fn func(q *db.Queries, ctx context.Context) error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbWriteTimeout)
	defer cancel()
	return db.WithTx(wctx, c.db, func(tx *sql.Tx) error {
		return fn(db.New(tx), wctx)
	})
}

// completer is the llm.Completer bound to one provider for one turn: attempts, retries,
// backoff and the attempt log.
type completer struct {
	c            *Cascade
	e            *Entry
	compactionID int64
	caller       context.Context // Run's context: when it ends, the class is canceled
	turn         context.Context // the turn's context: when it ends alone, the class is timeout

	mu   sync.Mutex
	last *ProviderError
	dbe  error
}

var _ llm.Completer = (*completer)(nil)

// Complete sends req up to the provider's MaxAttempts times. A response counts when its text
// is not blank, its finish reason is not "length" and req.Accept (if set) takes it; anything
// else is a bad_response. Retried classes wait an exponential backoff with jitter, at least
// the Retry-After the server sent; when that wait would run past ctx's deadline (the turn's
// budget), the provider gives up at once instead. Every attempt is logged. The error is a
// *ProviderError.
func (k *completer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c, e := k.c, k.e
	if e.Provider == nil {
		return llm.Response{}, k.fail(k.refine(&ProviderError{Class: ClassBadRequest, Err: errors.New("the entry has no provider")}))
	}
	maxAttempts := e.maxAttempts()
	var bo *backoff.ExponentialBackOff
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return llm.Response{}, k.fail(k.classify(err))
		}
		c.emit(Event{Provider: e.Name, Kind: EventTry, Attempt: attempt, MaxAttempts: maxAttempts})
		info := &callState{}
		startedAt := c.now()
		start := time.Now()
		resp, err := e.Provider.Complete(withCallState(ctx, info), req)
		elapsed := time.Since(start)
		if err == nil {
			err = check(resp, req)
		}
		var pe *ProviderError
		if err != nil {
			pe = k.classify(err)
			status, retryAfter := info.result()
			if pe.HTTPStatus == 0 {
				pe.HTTPStatus = status
			}
			if pe.RetryAfter == 0 {
				pe.RetryAfter = retryAfter
			}
		}
		if dbErr := k.log(ctx, startedAt, elapsed, resp, info, pe); dbErr != nil {
			return llm.Response{}, dbErr
		}
		if pe == nil {
			return resp, nil
		}
		k.fail(pe)
		if !retryable(pe.Class) || attempt >= maxAttempts {
			return llm.Response{}, pe
		}
		if bo == nil {
			bo = c.newBackoff()
		}
		wait := max(bo.NextBackOff(), pe.RetryAfter)
		if deadline, ok := ctx.Deadline(); ok && wait >= time.Until(deadline) {
			return llm.Response{}, pe // the wait would outlast the turn's budget
		}
		c.emit(Event{Provider: e.Name, Kind: EventRetry, Attempt: attempt, MaxAttempts: maxAttempts, Wait: wait,
			Class: pe.Class, HTTPStatus: pe.HTTPStatus, Err: pe.detail()})
		c.emit(Event{Provider: e.Name, Kind: EventWait, Attempt: attempt + 1, MaxAttempts: maxAttempts, Wait: wait})
		if err := c.sleep(ctx, wait); err != nil {
			return llm.Response{}, k.fail(k.classify(err))
		}
	}
}

// check decides whether a response counts.
func check(resp llm.Response, req llm.Request) error {
	if strings.TrimSpace(resp.Text) == "" {
		return fmt.Errorf("%w: empty completion (finish_reason %q)", llm.ErrBadResponse, resp.FinishReason)
	}
	if resp.FinishReason == "length" {
		return fmt.Errorf("%w: completion truncated (finish_reason length)", llm.ErrBadResponse)
	}
	if req.Accept != nil {
		if err := req.Accept(resp.Text); err != nil {
			return fmt.Errorf("%w: rejected: %w", llm.ErrBadResponse, err)
		}
	}
	return nil
}

// classify turns an attempt's error into this provider's *ProviderError.
func (k *completer) classify(err error) *ProviderError {
	var pe *ProviderError
	if errors.As(err, &pe) {
		cp := *pe
		if cp.Err == nil {
			cp.Err = err
		}
		return k.refine(&cp)
	}
	class, status, retryAfter := Classify(err)
	return k.refine(&ProviderError{Class: class, HTTPStatus: status, RetryAfter: retryAfter, Err: err})
}

// refine names the provider and decides what an ended context means: the caller's context
// ended → canceled; the turn's budget ran out → timeout.
func (k *completer) refine(pe *ProviderError) *ProviderError {
	pe.Provider, pe.Model, pe.redact = k.e.Name, k.e.Model, k.c.clean
	if cerr := k.caller.Err(); cerr != nil {
		pe.Class = ClassCanceled
		if !errors.Is(pe.Err, cerr) {
			pe.Err = fmt.Errorf("%w (%v)", cerr, pe.Err)
		}
		return pe
	}
	if k.turn.Err() != nil && (pe.Class == ClassCanceled || pe.Class == ClassTimeout ||
		errors.Is(pe.Err, context.DeadlineExceeded) || errors.Is(pe.Err, context.Canceled)) {
		pe.Class = ClassTimeout
		pe.Err = fmt.Errorf("attempt timeout of %s exceeded: %w", k.c.AttemptTimeout, pe.Err)
	}
	return pe
}

func (k *completer) fail(pe *ProviderError) *ProviderError {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = pe
	return pe
}

func (k *completer) lastFailure() *ProviderError {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

func (k *completer) dbError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dbe
}

// log records one attempt. A database error is kept: it ends the cascade.
func (k *completer) log(ctx context.Context, startedAt time.Time, elapsed time.Duration, resp llm.Response, info *callState, pe *ProviderError) error {
	row := db.InsertAttemptParams{
		CompactionID:     nullID(k.compactionID),
		Provider:         k.e.Name,
		Model:            k.e.Model,
		StartedAt:        startedAt.UnixMilli(),
		DurationMs:       elapsed.Milliseconds(),
		Outcome:          OutcomeOK,
		PromptTokens:     int64(resp.PromptTokens),
		CompletionTokens: int64(resp.CompletionTokens),
	}
	status, _ := info.result()
	row.HttpStatus = int64(status)
	if pe != nil {
		row.Outcome = OutcomeError
		row.HttpStatus = int64(pe.HTTPStatus)
		row.ErrorClass = pe.Class
		row.Error = pe.detail()
	}
	err := k.c.write(ctx, func(q *db.Queries, wctx context.Context) error {
		_, err := q.InsertAttempt(wctx, row)
		return err
	})
	if err != nil {
		err = fmt.Errorf("cascade: record attempt of %s: %w", k.e.Name, err)
		k.mu.Lock()
		k.dbe = err
		k.mu.Unlock()
	}
	return err
}

func nullID(id int64) sql.NullInt64 {
	return sql.NullInt64{Int64: id, Valid: id != 0}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " [...]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// callState carries, in a request's context, what the OpenAI provider's transport learns
// about the HTTP exchange (status, Retry-After) and one setting it needs (sending an explicit
// temperature 0). The cascade puts one in the context of each attempt.
type callState struct {
	mu              sync.Mutex
	zeroTemperature bool
	status          int
	retryAfter      time.Duration
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

func callStateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

func (st *callState) record(status int, retryAfter time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.status, st.retryAfter = status, retryAfter
}

func (st *callState) result() (int, time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status, st.retryAfter
}
