// Package cascade sends chat completions through a cascade of providers tried in order: any
// OpenAI-compatible endpoint (OpenAI), the built-in offline summarizer (package extractive), and a scriptable Fake for tests.
// Every provider is an llm.Completer. A provider that fails is retried within its
// max_attempts, then put on a cooldown stored in SQLite, so every process using the database
// file, and every restart, skips it until the cooldown ends. Every attempt, skips included, is
// logged in the database with a redacted error text.
//
// The cascade never waits long on one provider while another could answer: a wait longer than
// the provider's MaxWait puts it on cooldown at once and the next one is tried, and when the
// caller's context has a deadline, time is kept for an offline rung at the end, which is always
// tried however the budget was spent.
//
// The files: cascade.go is the provider loop, retry.go the retrying completer of one
// provider's turn, cooldown.go the cooldown and attempt-log storage, errors.go the error
// classes, openai.go the OpenAI-compatible provider, window.go the windows read from servers
// (context_window: auto), usage.go the tokens of an attempt whose server sent no usage.
//
// The package knows nothing about compaction: a caller hands Run an llm.Task, which talks to
// one provider at a time through an llm.Completer. It owns the providers' cooldowns, the
// attempt log it writes (cascade_attempts; the store reads it: memory.Store.Attempts) and the
// classes of provider errors. It must not import package memory, compact or config.
package cascade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/redact"
)

// Defaults used where a Cascade or Entry field is zero.
const (
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultCooldown       = 30 * time.Second
	DefaultMaxCooldown    = time.Hour
	// DefaultMaxWait is the longest pause between two attempts of one provider; a longer
	// Retry-After or backoff puts the provider on cooldown and the cascade moves on.
	DefaultMaxWait = 10 * time.Second
	// DefaultOfflineReserve is the most time kept for the offline rung at the end of the
	// caller's deadline (a quarter of the time left when that is less).
	DefaultOfflineReserve = 2 * time.Second
)

// minTurn is the least time a provider's turn must have for a request to be worth sending;
// with less, the provider is skipped (outcome skipped_budget).
const minTurn = 250 * time.Millisecond

// Outcome is how one attempt ended, as stored in cascade_attempts.outcome (memory.Attempt.Outcome).
type Outcome string

// Attempt outcomes; Outcomes lists them all.
const (
	OutcomeOK              Outcome = "ok"
	OutcomeError           Outcome = "error"
	OutcomeSkippedCooldown Outcome = "skipped_cooldown"
	// OutcomeSkippedWindow: the task found the provider's window too small for a useful
	// request (llm.ErrWindowTooSmall); no request sent, no cooldown.
	OutcomeSkippedWindow Outcome = "skipped_window"
	// OutcomeSkippedBudget: the caller's deadline left no time for the provider; no request
	// sent, no cooldown.
	OutcomeSkippedBudget Outcome = "skipped_budget"
	// OutcomeSkippedCost: the task estimated the provider's requests over its spending limit
	// (llm.ErrOverCost); no request sent, no cooldown.
	OutcomeSkippedCost Outcome = "skipped_cost"
)

// Outcomes is every attempt outcome, the one list of them.
var Outcomes = []Outcome{OutcomeOK, OutcomeError, OutcomeSkippedCooldown, OutcomeSkippedWindow, OutcomeSkippedBudget, OutcomeSkippedCost}

// EventKind is what a cascade event reports.
type EventKind string

// Event kinds reported to Cascade.Observe; EventKinds lists them all.
const (
	EventTry        EventKind = "try"         // attempt Attempt of MaxAttempts starts
	EventRetry      EventKind = "retry"       // attempt Attempt failed (Class, Err); the next one follows after Wait
	EventWait       EventKind = "wait"        // the pause of Wait before attempt Attempt starts
	EventSkip       EventKind = "skip"        // the provider is cooling down until CoolingUntil; no request sent
	EventSkipWindow EventKind = "skip_window" // the provider's window is too small for the task (Err); no request sent
	EventSkipBudget EventKind = "skip_budget" // no time was left for the provider (Err); no request sent
	EventSkipCost   EventKind = "skip_cost"   // the provider's estimate was over the spending limit (Err); no request sent
	EventFail       EventKind = "fail"        // the provider gave up (Class, Err); CoolingUntil is set when it cools down
	EventOK         EventKind = "ok"          // the provider produced the result
	// EventWindow: the window of an entry read from its server (Entry.AutoWindow) is Window;
	// Err says where it was read, or, with Warning set, why the fallback Window is used.
	EventWindow EventKind = "window"
)

// EventKinds is every event kind, the one list of them.
var EventKinds = []EventKind{EventTry, EventRetry, EventWait, EventSkip, EventSkipWindow, EventSkipBudget, EventSkipCost, EventFail, EventOK, EventWindow}

// Provider is the interface every rung implements: one chat completion request, no retries.
//
// Deprecated: it is llm.Completer; use that.
type Provider = llm.Completer

// Offliner is implemented by a provider that answers locally and at once (no network, no
// waiting). The cascade keeps time for such a rung and always tries it. Entry.Offline says
// the same for a provider that does not implement it.
type Offliner interface {
	Offline() bool
}

// Retargeter is implemented by a provider whose target is chosen for each run, from the
// caller's context and the compaction it summarizes for (memctl serve's upstream rung: the
// model serve fronts, in the API shape and with the model of the thread being compacted).
// Retarget is given the entry as built and returns the entry of this run (its Provider and
// Model, its window...; its Name is kept: the cooldown is the entry's), or false to pass the
// entry over for this run: no request, no attempt row, no cooldown.
type Retargeter interface {
	Retarget(ctx context.Context, compactionID int64, e Entry) (Entry, bool)
}

// Entry is one rung of the cascade: a provider and its settings. It shares its name with
// memory.Entry (a message of a thread's active context), a different concept: the two packages
// never import each other, and each name reads right where it is used (cascade.New(db,
// entries...)); renaming this one would touch every caller for no change of meaning.
type Entry struct {
	Name     string // unique; the key of the provider's cooldown state
	Type     string // "openai", "extractive", "fake"...: for display
	Model    string
	BaseURL  string // for display ("" for extractive)
	Provider llm.Completer
	// Offline marks a provider that answers locally and at once (see Offliner).
	Offline bool

	ContextWindow   int // tokens the provider accepts; 0: unknown
	MaxOutputTokens int
	// AutoWindow: the window is read from the provider's server (it must be a WindowReader)
	// before its turn and cached in the database (see Cascade.WindowTTL); it is read again
	// after an answer of class context_length. When the server does not say, ContextWindow is
	// used when set, else Cascade.DefaultWindow.
	AutoWindow bool
	// Concurrency is how many requests of one task the provider may serve at once; values
	// below 1 mean 1 (local servers usually serve one at a time). It is passed to the task in
	// llm.Target; the cascade itself sends what the task sends.
	Concurrency int

	// MaxAttempts is the number of attempts within one turn; values below 1 mean 1.
	MaxAttempts int
	// MaxWait is the longest pause before a retry; a Retry-After or backoff beyond it ends
	// the provider's turn at once (with a cooldown at least as long as the Retry-After).
	// Zero means DefaultMaxWait.
	MaxWait time.Duration
	// Cooldown is the first cooldown; it doubles with each consecutive failure up to
	// MaxCooldown. Zero means DefaultCooldown and DefaultMaxCooldown.
	Cooldown, MaxCooldown time.Duration

	// Price is what the provider charges (nil: no price). Each attempt that sent a request is
	// stored with the cost of its tokens at this price; an attempt of a provider without one
	// has no cost (NULL, not 0). An offline rung is free: its price is ignored.
	Price *llm.Price
}

// price is the entry's price; nil for none and for an offline rung.
func (e *Entry) price() *llm.Price {
	if e.Price == nil || e.offline() {
		return nil
	}
	return e.Price
}

func (e *Entry) maxAttempts() int { return max(e.MaxAttempts, 1) }

func (e *Entry) maxWait() time.Duration {
	if e.MaxWait > 0 {
		return e.MaxWait
	}
	return DefaultMaxWait
}

func (e *Entry) offline() bool {
	if e.Offline {
		return true
	}
	o, ok := e.Provider.(Offliner)
	return ok && o.Offline()
}

// target describes the entry to a task, with the window of this turn.
func (e *Entry) target(window int) llm.Target {
	return llm.Target{Name: e.Name, Model: e.Model, ContextWindow: window, MaxOutputTokens: e.MaxOutputTokens,
		Concurrency: max(e.Concurrency, 1), Price: e.price()}
}

// Event reports progress, for example for a CLI to print "local: server error (HTTP 503),
// retry 2/3 in 1.2s". Err is redacted.
type Event struct {
	Provider     string        // the entry's name
	Kind         EventKind     // one of EventKinds
	Attempt      int           // try, retry, wait: the attempt's number, from 1
	MaxAttempts  int           // try, retry, wait: the entry's max attempts
	Wait         time.Duration // retry, wait: the pause before the next attempt
	Class        Class         // retry, fail: the failure's class
	HTTPStatus   int           // retry, fail: the response's status (0: none)
	Err          string        // retry, skip, fail: what went wrong, redacted; window: where it was read, or why not
	CoolingUntil time.Time     // skip, and fail when the provider now cools down
	Window       int           // window: the window used for the provider
	Warning      bool          // window: the server did not say; Window is the fallback
}

// Cascade tries its entries in order. Create it with New or NewWith; it does not change once
// built, and is safe for concurrent use.
type Cascade struct {
	// Entries are the rungs, in order, as given to New (read them; do not change them).
	Entries []Entry

	opt    Options
	db     *db.Handle
	emitMu sync.Mutex
	warnMu sync.Mutex
	warned map[string]bool // entries whose fallback window was already reported
}

// Options are a cascade's settings beside its entries, given to NewWith. A zero field takes
// its default.
type Options struct {
	// AttemptTimeout bounds one provider's whole turn, retries and waits included; 0: none.
	AttemptTimeout time.Duration
	// OfflineReserve is the time kept, before the caller's deadline, for an offline rung
	// later in the cascade: at most this, and at most a quarter of the time left. Zero means
	// DefaultOfflineReserve.
	OfflineReserve time.Duration
	// Now is the clock of cooldowns and of the attempts' start times. Default time.Now. A
	// cascade that summarizes for a store is given the store's clock (memory.Store.Now), so
	// that a compaction and its attempts read one clock.
	Now func() time.Time
	// Sleep waits between attempts; it returns ctx.Err() when ctx ends first. Default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// InitialBackoff and MaxBackoff shape the exponential backoff (with jitter) between
	// attempts. Defaults DefaultInitialBackoff and DefaultMaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// Redact is applied to every error text stored, reported or returned. Default:
	// redact.Default, the built-in patterns (a text it cannot redact is withheld).
	Redact func(string) string
	// Observe, when set, receives progress events, synchronously and one at a time (a task
	// that sends requests in parallel has its events delivered in turn, not at once).
	Observe func(Event)
	// Logger, when set, receives a record of each attempt (skips included), of each cooldown
	// set or cleared, with the keys provider, model, compaction_id, outcome, http_status,
	// class, duration_ms, error (redacted), cost_micros (an attempt of a provider with a
	// price), failures and cooling_until. nil: silent.
	Logger *slog.Logger
	// Count counts the tokens of a text, for the usage of a request whose server sent none
	// (the attempt is then marked usage_estimated). Default: one token per four bytes.
	Count func(string) int
	// DefaultWindow is the window assumed for an entry whose window is read from its server
	// (Entry.AutoWindow) when the server does not say; zero means DefaultAutoWindow.
	DefaultWindow int
	// WindowTTL is how long a window read from a server is trusted before it is read again;
	// zero means DefaultWindowTTL.
	WindowTTL time.Duration
}

// New returns a cascade of entries that keeps its cooldowns and attempt log in the database h,
// with the default Options.
func New(h *db.Handle, entries ...Entry) *Cascade { return NewWith(h, Options{}, entries...) }

// NewWith returns a cascade of entries with the settings opt that keeps its cooldowns and
// attempt log in the database h (the store's, when it summarizes for one: see memory.New).
func NewWith(h *db.Handle, opt Options, entries ...Entry) *Cascade {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Sleep == nil {
		opt.Sleep = sleep
	}
	if opt.InitialBackoff <= 0 {
		opt.InitialBackoff = DefaultInitialBackoff
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = DefaultMaxBackoff
	}
	if opt.Redact == nil {
		opt.Redact = redact.Default()
	}
	return &Cascade{Entries: entries, opt: opt, db: h}
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
	if c.opt.Now != nil {
		return c.opt.Now()
	}
	return time.Now()
}

func (c *Cascade) sleep(ctx context.Context, d time.Duration) error {
	if c.opt.Sleep != nil {
		return c.opt.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}

func (c *Cascade) emit(ev Event) {
	if c.opt.Observe != nil {
		c.emitMu.Lock()
		defer c.emitMu.Unlock()
		c.opt.Observe(ev)
	}
}

// newError returns a provider's failure that no request produced (a skip, a cancel before
// the turn), redacted with the cascade's redactor.
func (c *Cascade) newError(e *Entry, class Class, err error) *ProviderError {
	return &ProviderError{Provider: e.Name, Model: e.Model, Class: class, Err: err, redact: c.opt.Redact}
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
// A provider that is a Retargeter is asked for its entry of this run first, and passed over
// (silently) when it has none. A provider cooling down is skipped without a request (and the
// skip is logged). Otherwise
// task runs under AttemptTimeout with a Completer bound to that provider. When the task
// fails, the provider's failure class is that of the *ProviderError its error wraps, else
// Classify's class of the error, else the class of the last failed attempt; the provider is
// then put on cooldown unless the class is context_length or canceled, and the next one is
// tried. A task that returns an empty text has failed with bad_response; one that returns
// llm.ErrWindowTooSmall skips the provider (outcome skipped_window, no cooldown), and one that
// returns llm.ErrOverCost skips it for its cost (outcome skipped_cost, no cooldown). A success
// resets the provider's cooldown.
//
// When ctx has a deadline, each provider's turn ends before it, keeping time for an offline
// rung later in the cascade (see OfflineReserve); a provider cut this way fails with class
// timeout but is not cooled down (the budget was the caller's, the provider did not fail),
// one left no time is skipped (outcome skipped_budget). An offline
// rung is tried even after the deadline has passed.
//
// When no provider succeeds Run returns an *Error wrapping every provider's cause. When the
// caller's ctx is canceled, Run returns at once (class canceled, no cooldown, no further
// provider) with an *Error that also satisfies errors.Is(err, context.Canceled). A database
// failure is returned as is.
func (c *Cascade) Run(ctx context.Context, compactionID int64, task llm.Task) (llm.Result, error) {
	var causes []*ProviderError
	for i := range c.Entries {
		e := &c.Entries[i]
		if canceled(ctx) {
			return llm.Result{}, &Error{Causes: append(causes, c.newError(e, ClassCanceled, ctx.Err()))}
		}
		if rt, ok := e.Provider.(Retargeter); ok {
			run, ok := rt.Retarget(ctx, compactionID, *e)
			if !ok {
				continue
			}
			run.Name = e.Name
			e = &run
		}
		text, pe, err := c.try(ctx, compactionID, i, e, task)
		if err != nil {
			return llm.Result{}, err
		}
		if pe == nil {
			return llm.Result{Text: text, Provider: e.Name, Model: e.Model}, nil
		}
		causes = append(causes, pe)
		if pe.Class == ClassCanceled && canceled(ctx) {
			return llm.Result{}, &Error{Causes: causes}
		}
	}
	return llm.Result{}, &Error{Causes: causes}
}

// canceled reports whether the caller gave up (a deadline that passed is not a cancel: the
// offline rung still runs).
func canceled(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// try gives entry i, e (its entry of this run: see Retargeter), its turn: skipped when cooling
// down or out of time, else task runs. It returns the text, or the provider's failure, or a
// database error that ends the cascade.
func (c *Cascade) try(ctx context.Context, compactionID int64, i int, e *Entry, task llm.Task) (string, *ProviderError, error) {
	row, err := c.cooldownRow(ctx, e.Name)
	if err != nil {
		if canceled(ctx) {
			return "", c.newError(e, ClassCanceled, ctx.Err()), nil
		}
		return "", nil, fmt.Errorf("cascade: read cooldown of %s: %w", e.Name, err)
	}
	if until := time.UnixMilli(row.CoolingUntil); row.CoolingUntil > c.now().UnixMilli() {
		pe, err := c.skipCooling(ctx, compactionID, e, row, until)
		return "", pe, err
	}
	turnCtx, limit, ours, cancel := c.turnContext(ctx, i)
	defer cancel()
	if turnCtx == nil {
		pe, err := c.skip(ctx, compactionID, e, OutcomeSkippedBudget, errors.New(limit))
		return "", pe, err
	}
	window := c.window(turnCtx, e, row)
	text, pe, err := c.turn(ctx, turnCtx, limit, compactionID, e, task, window)
	if err == nil && pe != nil && pe.Class == ClassContextLength && e.AutoWindow {
		// The window used was wrong (or its server changed): ask again, and when the server
		// now reports another window, run the task once more with it.
		c.forgetWindow(ctx, e)
		if fresh, ok := c.readWindow(turnCtx, e); ok && fresh != window && turnCtx.Err() == nil {
			text, pe, err = c.turn(ctx, turnCtx, limit, compactionID, e, task, fresh)
		}
	}
	switch {
	case err != nil:
		return "", nil, err
	case pe == nil:
		if err := c.reset(ctx, e.Name, row); err != nil {
			return "", nil, err
		}
		c.emit(Event{Provider: e.Name, Kind: EventOK})
		return text, nil, nil
	case errors.Is(pe.Err, llm.ErrWindowTooSmall):
		pe, err := c.skip(ctx, compactionID, e, OutcomeSkippedWindow, pe.Err)
		return "", pe, err
	case errors.Is(pe.Err, llm.ErrOverCost):
		pe, err := c.skip(ctx, compactionID, e, OutcomeSkippedCost, pe.Err)
		return "", pe, err
	case pe.Class == ClassTimeout && turnCtx.Err() != nil && ours:
		// Cut by the caller's budget (an emergency's, a total timeout), not by a limit of the
		// provider's own: it did not fail, so it is not cooled down.
		c.emit(Event{Provider: e.Name, Kind: EventFail, Class: pe.Class, HTTPStatus: pe.HTTPStatus, Err: pe.detail()})
		return "", pe, nil
	}
	return "", pe, c.failed(ctx, e, pe)
}

// failed reports a provider's failure and, unless its class spares it, puts it on cooldown.
func (c *Cascade) failed(ctx context.Context, e *Entry, pe *ProviderError) error {
	ev := Event{Provider: e.Name, Kind: EventFail, Class: pe.Class, HTTPStatus: pe.HTTPStatus, Err: pe.detail()}
	if coolsDown(pe.Class) {
		until, err := c.recordFailure(ctx, e, pe)
		if err != nil {
			return err
		}
		ev.CoolingUntil = until
	}
	c.emit(ev)
	return nil
}

// turnContext returns the context of entry i's turn and the name of the limit that bounds it:
// AttemptTimeout and, when the caller has a deadline, that deadline less the time kept for a
// later offline rung. An offline rung's turn ignores the caller's deadline. A nil context
// means no time is left for the turn; limit then says so. ours reports a turn bounded by the
// caller's deadline rather than by AttemptTimeout.
func (c *Cascade) turnContext(ctx context.Context, i int) (turn context.Context, limit string, ours bool, cancel context.CancelFunc) {
	if c.Entries[i].offline() {
		ctx, stop := withoutDeadline(ctx)
		turn, limit, cancel := c.attemptTimeout(ctx)
		return turn, limit, false, func() { cancel(); stop() }
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		turn, limit, cancel := c.attemptTimeout(ctx)
		return turn, limit, false, cancel
	}
	left, limit := time.Until(deadline), "total timeout"
	if c.offlineAfter(i) {
		reserve := c.opt.OfflineReserve
		if reserve <= 0 {
			reserve = DefaultOfflineReserve
		}
		keep := min(reserve, max(left/4, 0))
		left -= keep
		limit = fmt.Sprintf("total timeout (less %s kept for the offline rung)", keep.Round(time.Millisecond))
	}
	if left < minTurn {
		return nil, fmt.Sprintf("no time left for a request: %s remained of the %s, a turn needs %s",
			max(left, 0).Round(time.Millisecond), limit, minTurn), true, func() {}
	}
	if c.opt.AttemptTimeout > 0 && c.opt.AttemptTimeout <= left {
		turn, limit, cancel := c.attemptTimeout(ctx)
		return turn, limit, false, cancel
	}
	turn, cancel = context.WithTimeout(ctx, left)
	return turn, limit, true, cancel
}

// attemptTimeout bounds ctx by AttemptTimeout (when set).
func (c *Cascade) attemptTimeout(ctx context.Context) (context.Context, string, context.CancelFunc) {
	limit := fmt.Sprintf("attempt timeout of %s", c.opt.AttemptTimeout)
	if c.opt.AttemptTimeout <= 0 {
		return ctx, limit, func() {}
	}
	turn, cancel := context.WithTimeout(ctx, c.opt.AttemptTimeout)
	return turn, limit, cancel
}

// offlineAfter reports whether an offline rung follows entry i.
func (c *Cascade) offlineAfter(i int) bool {
	for j := i + 1; j < len(c.Entries); j++ {
		if c.Entries[j].offline() {
			return true
		}
	}
	return false
}

// withoutDeadline returns ctx without its deadline: canceled when ctx is canceled, not when
// its deadline passes.
func withoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if canceled(ctx) {
			cancel(ctx.Err())
		}
	})
	return out, func() { stop(); cancel(nil) }
}

// turn runs task against one provider within turnCtx, bounded by limit. It returns the text,
// or the provider's failure, or a database error that ends the cascade.
func (c *Cascade) turn(ctx, turnCtx context.Context, limit string, compactionID int64, e *Entry, task llm.Task, window int) (string, *ProviderError, error) {
	k := &completer{c: c, e: e, compactionID: compactionID, caller: ctx, turn: turnCtx, limit: limit}
	text, err := task(turnCtx, e.target(window), k)
	if dbErr := k.dbError(); dbErr != nil {
		return "", nil, dbErr
	}
	if err == nil {
		if strings.TrimSpace(text) != "" {
			if e.AutoWindow && k.sawClass(ClassContextLength) {
				// The task got past a context_length answer (it split smaller), so the window it
				// was given is wrong: read the server's again for the next turn.
				c.forgetWindow(ctx, e)
				c.readWindow(ctx, e)
			}
			return text, nil, nil
		}
		err = fmt.Errorf("%w: the task returned an empty text", llm.ErrBadResponse)
	}
	return "", k.failure(err), nil
}

// skipCooling logs and reports a provider cooling down.
func (c *Cascade) skipCooling(ctx context.Context, compactionID int64, e *Entry, row db.ProviderCooldown, until time.Time) (*ProviderError, error) {
	cause := fmt.Errorf("%w until %s", ErrCoolingDown, until.UTC().Format(time.RFC3339))
	if row.ConsecutiveFailures > 0 {
		cause = fmt.Errorf("%w after %d consecutive failures (last: %s)", cause, row.ConsecutiveFailures, row.LastError)
	}
	pe := c.newError(e, "", cause)
	if err := c.logSkip(ctx, compactionID, e, OutcomeSkippedCooldown, pe); err != nil {
		return nil, err
	}
	c.emit(Event{Provider: e.Name, Kind: EventSkip, Err: pe.detail(), CoolingUntil: until})
	return pe, nil
}

// skip logs and reports a provider left out for its window, its cost or for lack of time: no
// request, no cooldown.
func (c *Cascade) skip(ctx context.Context, compactionID int64, e *Entry, outcome Outcome, cause error) (*ProviderError, error) {
	pe := c.newError(e, "", cause)
	if err := c.logSkip(ctx, compactionID, e, outcome, pe); err != nil {
		return nil, err
	}
	kind := map[Outcome]EventKind{OutcomeSkippedWindow: EventSkipWindow, OutcomeSkippedCost: EventSkipCost}[outcome]
	if kind == "" {
		kind = EventSkipBudget
	}
	c.emit(Event{Provider: e.Name, Kind: kind, Err: pe.detail()})
	return pe, nil
}
