package cascade

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/llm"
)

// completer is the llm.Completer bound to one provider for one turn: attempts, retries,
// backoff and the attempt log. It does not classify what a provider of this package returns
// (OpenAI, Fake: a finished *ProviderError); it reads its class. Every failure it returns
// passes through finish once: named after the entry when the provider did not name itself,
// and an ended context read as canceled (the caller gave up) or timeout (the turn's limit
// passed), which only the cascade, owning both contexts, can tell.
type completer struct {
	c            *Cascade
	e            *Entry
	compactionID int64
	caller       context.Context // Run's context: when it is canceled, the class is canceled
	turn         context.Context // the turn's context: when it ends otherwise, the class is timeout
	limit        string          // what bounds the turn, for the timeout's text

	mu     sync.Mutex
	issued []*ProviderError // the failures returned, each refined
	dbe    error
}

var (
	_ llm.Completer        = (*completer)(nil)
	_ llm.TranscriptReader = (*completer)(nil)
)

// ReadsTranscript reports whether the entry's provider reads only a request's conversation
// (llm.TranscriptReader): a task may leave the request's Messages out then.
func (k *completer) ReadsTranscript() bool {
	r, ok := k.e.Provider.(llm.TranscriptReader)
	return ok && r.ReadsTranscript()
}

// sawClass reports whether a failure of this class was returned to the task during the turn.
func (k *completer) sawClass(class Class) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, pe := range k.issued {
		if pe.Class == class {
			return true
		}
	}
	return false
}

// Complete sends req up to the provider's MaxAttempts times. A response counts when its text
// is not blank, its finish reason is not "length" and req.Accept (if set) takes it; anything
// else is a bad_response. Retried classes wait an exponential backoff with jitter, at least
// the Retry-After the server sent; when that wait is longer than the provider's MaxWait or
// would run past ctx's deadline (the turn's budget), the provider gives up at once instead.
// Every attempt is logged. The error is a *ProviderError.
func (k *completer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if k.e.Provider == nil {
		return llm.Response{}, k.finish(&ProviderError{Class: ClassBadRequest, Err: errors.New("the entry has no provider")})
	}
	var bo *backoff.ExponentialBackOff
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return llm.Response{}, k.finish(failureOf(err))
		}
		resp, pe, err := k.attempt(ctx, attempt, req)
		if err != nil {
			return llm.Response{}, err
		}
		if pe == nil {
			return resp, nil
		}
		if bo == nil {
			bo = k.c.newBackoff()
		}
		wait, ok := k.nextWait(ctx, attempt, pe, bo)
		if !ok {
			return llm.Response{}, pe
		}
		k.c.emit(Event{Provider: k.e.Name, Kind: EventRetry, Attempt: attempt, MaxAttempts: k.e.maxAttempts(), Wait: wait,
			Class: pe.Class, HTTPStatus: pe.HTTPStatus, Err: pe.detail()})
		k.c.emit(Event{Provider: k.e.Name, Kind: EventWait, Attempt: attempt + 1, MaxAttempts: k.e.maxAttempts(), Wait: wait})
		if err := k.c.sleep(ctx, wait); err != nil {
			return llm.Response{}, k.finish(failureOf(err))
		}
	}
}

// attempt sends req once and logs it. It returns the response, or the attempt's failure, or
// a database error.
func (k *completer) attempt(ctx context.Context, n int, req llm.Request) (llm.Response, *ProviderError, error) {
	k.c.emit(Event{Provider: k.e.Name, Kind: EventTry, Attempt: n, MaxAttempts: k.e.maxAttempts()})
	startedAt := k.c.now()
	start := time.Now()
	resp, err := k.e.Provider.Complete(ctx, req)
	elapsed := time.Since(start)
	var pe *ProviderError
	if err != nil {
		// A provider of this package classified its failure where it saw it; the error of one
		// from outside (the offline rung, a caller's llm.Completer) is classified here, where
		// it leaves that provider.
		pe = k.finish(failureOf(err))
	} else if err = check(resp, req); err != nil {
		// The exchange succeeded; its answer did not count.
		pe = k.finish(&ProviderError{Class: ClassBadResponse, HTTPStatus: resp.HTTPStatus, Err: err})
	}
	if dbErr := k.log(ctx, startedAt, elapsed, req, resp, pe); dbErr != nil {
		return llm.Response{}, nil, dbErr
	}
	return resp, pe, nil
}

// nextWait returns the pause before attempt n+1, or false when the provider gives up now:
// the class is not retried, the attempts are spent, or the wait is longer than MaxWait or
// than what is left of ctx (the cooldown then honours the Retry-After).
func (k *completer) nextWait(ctx context.Context, n int, pe *ProviderError, bo *backoff.ExponentialBackOff) (time.Duration, bool) {
	if !retryable(pe.Class) || n >= k.e.maxAttempts() {
		return 0, false
	}
	wait := max(bo.NextBackOff(), pe.RetryAfter)
	if wait > k.e.maxWait() {
		return 0, false
	}
	if deadline, ok := ctx.Deadline(); ok && wait >= time.Until(deadline) {
		return 0, false
	}
	return wait, true
}

func (c *Cascade) newBackoff() *backoff.ExponentialBackOff {
	initial, ceiling := c.opt.InitialBackoff, c.opt.MaxBackoff
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if ceiling <= 0 {
		ceiling = DefaultMaxBackoff
	}
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(initial),
		backoff.WithMaxInterval(ceiling),
		backoff.WithMaxElapsedTime(0), // the budget is the turn's context and MaxWait
	)
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

// failure is the provider's failure for the error a task returned: the *ProviderError this
// completer issued when the error wraps one (as it is, its class read, not decided again);
// else the error's own class (failureOf), taking the class of the last failed attempt when
// the error carries none (a task that gave up after a failure it did not wrap).
func (k *completer) failure(err error) *ProviderError {
	var issued *ProviderError
	if errors.As(err, &issued) && k.issuedBy(issued) {
		return issued
	}
	pe := failureOf(err)
	if last := k.last(); pe.Class == "" && issued == nil && last != nil {
		pe.Class, pe.HTTPStatus, pe.RetryAfter = last.Class, last.HTTPStatus, last.RetryAfter
	}
	return k.finish(pe)
}

// finish names the provider (when it did not name itself) and decides what an ended context
// means: the caller canceled → canceled; the turn's limit passed → timeout. It is the only
// place the completer changes a failure; each failure it returns passes here once.
func (k *completer) finish(pe *ProviderError) *ProviderError {
	if pe.Provider == "" {
		pe.Provider, pe.Model = k.e.Name, k.e.Model
	}
	pe.redact = k.c.opt.Redact
	if canceled(k.caller) {
		pe.Class = ClassCanceled
		if !errors.Is(pe.Err, context.Canceled) {
			pe.Err = fmt.Errorf("%w (%v)", context.Canceled, pe.Err)
		}
	} else if k.turn.Err() != nil && (pe.Class == ClassCanceled || pe.Class == ClassTimeout ||
		errors.Is(pe.Err, context.DeadlineExceeded) || errors.Is(pe.Err, context.Canceled)) {
		pe.Class = ClassTimeout
		pe.Err = fmt.Errorf("%s exceeded: %w", k.limit, pe.Err)
	}
	k.mu.Lock()
	k.issued = append(k.issued, pe)
	k.mu.Unlock()
	return pe
}

func (k *completer) issuedBy(pe *ProviderError) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Contains(k.issued, pe)
}

func (k *completer) last() *ProviderError {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.issued) == 0 {
		return nil
	}
	return k.issued[len(k.issued)-1]
}

func (k *completer) dbError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dbe
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// log records one attempt, with its usage (see Cascade.usage) and, when the entry has a price,
// the usage's cost. A database error is kept: it ends the cascade.
func (k *completer) log(ctx context.Context, startedAt time.Time, elapsed time.Duration, req llm.Request, resp llm.Response, pe *ProviderError) error {
	prompt, completion, estimated := k.c.usage(req, resp, pe)
	row := db.InsertAttemptParams{
		CompactionID:     nullID(k.compactionID),
		Provider:         k.e.Name,
		Model:            k.e.Model,
		StartedAt:        startedAt.UnixMilli(),
		DurationMs:       elapsed.Milliseconds(),
		Outcome:          string(OutcomeOK),
		HttpStatus:       int64(resp.HTTPStatus),
		PromptTokens:     int64(prompt),
		CompletionTokens: int64(completion),
		UsageEstimated:   boolInt(estimated),
	}
	if p := k.e.price(); p != nil {
		row.CostMicros = sql.NullInt64{Int64: p.Micros(prompt, completion), Valid: true}
	}
	if pe != nil {
		row.Outcome = string(OutcomeError)
		row.HttpStatus = int64(pe.HTTPStatus)
		row.ErrorClass = string(pe.Class)
		row.Error = pe.detail()
	}
	err := k.c.insertAttempt(ctx, row)
	if err != nil {
		err = fmt.Errorf("cascade: record attempt of %s: %w", k.e.Name, err)
		k.mu.Lock()
		k.dbe = err
		k.mu.Unlock()
	}
	return err
}
