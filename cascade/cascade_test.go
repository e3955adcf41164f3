package cascade_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/llm"
)

var userReq = llm.Request{Messages: []llm.Message{{Role: "user", Content: "summarize this"}}}

func serverError() error {
	return &openai.APIError{HTTPStatusCode: 503, HTTPStatus: "503 Service Unavailable", Message: "overloaded"}
}

func TestCoolingProviderIsSkipped(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, reply("never"))
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("from b")}}
	h := newHarness(t, sqldb, openAIEntry("a", srv.URL), fakeEntry("b", next))
	setCooldown(t, sqldb, "a", t0.Add(time.Minute), 3)

	res, err := h.c.Complete(context.Background(), 0, userReq)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "b" || res.Text != "from b" || res.Model != "fake" {
		t.Fatalf("result = %+v, want b's", res)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the cooling provider's server saw %d requests", n)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	if r := rows[0]; r.Provider != "a" || cascade.Outcome(r.Outcome) != cascade.OutcomeSkippedCooldown || r.ErrorClass != "" || r.DurationMs != 0 || r.HTTPStatus != 0 {
		t.Errorf("skip row = %+v", r)
	}
	if !strings.Contains(rows[0].Error, "cooling down until 2026-11-29T12:01:00Z") {
		t.Errorf("skip row error = %q, want the end of the cooldown", rows[0].Error)
	}
	if r := rows[1]; r.Provider != "b" || cascade.Outcome(r.Outcome) != cascade.OutcomeOK {
		t.Errorf("second row = %+v", r)
	}
	// The skip leaves the cooldown as it was.
	if row, _ := cooldown(t, sqldb, "a"); row.ConsecutiveFailures != 3 || row.CoolingUntil != t0.Add(time.Minute).UnixMilli() {
		t.Errorf("cooldown row changed by a skip: %+v", row)
	}
	var kinds []string
	for _, ev := range h.recordedEvents() {
		kinds = append(kinds, ev.Provider+":"+string(ev.Kind))
	}
	if got, want := strings.Join(kinds, " "), "a:skip b:try b:ok"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}

	// Once the cooldown is over, a is tried again.
	h.advance(time.Minute + time.Millisecond)
	res, err = h.c.Complete(context.Background(), 0, userReq)
	if err != nil || res.Provider != "a" || res.Text != "never" {
		t.Fatalf("after the cooldown: %+v, %v; want a's answer", res, err)
	}
	if row, _ := cooldown(t, sqldb, "a"); row.ConsecutiveFailures != 0 || row.CoolingUntil != 0 {
		t.Errorf("success did not reset the cooldown: %+v", row)
	}
}

func TestFallsThroughToExtractive(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, apiError(500, "", "", "boom"))
	h := newHarness(t, sqldb, openAIEntry("local", srv.URL),
		cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive", Provider: extractive.Summarizer{}})
	res, err := h.c.Complete(context.Background(), 0, llm.Request{MaxTokens: 200, Messages: []llm.Message{
		{Role: "system", Content: "Summarize."},
		{Role: "user", Content: "[#1 user]\nPlease rename the order W123.\n[#2 assistant]\nDone: W123 renamed."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "offline" || res.Model != "extractive" || !strings.Contains(res.Text, "rename the order W123") {
		t.Fatalf("result = %+v", res)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 3 || rows[2].Provider != "offline" || rows[2].Outcome != "ok" || rows[2].CompletionTokens == 0 {
		t.Fatalf("rows = %+v", rows)
	}
	if _, ok := cooldown(t, sqldb, "local"); !ok {
		t.Error("the failed provider has no cooldown")
	}
}

func TestAllProvidersFail(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, apiError(500, "", "", "boom"))
	tooLong := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded", Message: "too long"}
	}}
	h := newHarness(t, sqldb, openAIEntry("a", srv.URL), fakeEntry("b", tooLong), fakeEntry("c", &cascade.Fake{}))
	setCooldown(t, sqldb, "c", t0.Add(time.Hour), 1)

	_, err := h.c.Complete(context.Background(), 0, userReq)
	var ce *cascade.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %T %v, want *cascade.Error", err, err)
	}
	if len(ce.Causes) != 3 {
		t.Fatalf("causes = %v", ce.Causes)
	}
	for i, want := range []struct {
		provider string
		class    cascade.Class
	}{{"a", "server"}, {"b", "context_length"}, {"c", ""}} {
		if c := ce.Causes[i]; c.Provider != want.provider || c.Class != want.class {
			t.Errorf("cause %d = %s/%q, want %s/%q", i, c.Provider, c.Class, want.provider, want.class)
		}
	}
	var pe *cascade.ProviderError
	if !errors.As(err, &pe) || pe.Provider != "a" {
		t.Errorf("errors.As(*ProviderError) = %v", pe)
	}
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 {
		t.Errorf("errors.As(*openai.APIError) = %v: causes are not reachable", apiErr)
	}
	if !errors.Is(err, llm.ErrContextLength) {
		t.Error("errors.Is(err, llm.ErrContextLength) = false")
	}
	if !errors.Is(err, cascade.ErrCoolingDown) {
		t.Error("errors.Is(err, cascade.ErrCoolingDown) = false")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrBadResponse) {
		t.Error("err matches a cause it does not have")
	}
	for _, want := range []string{"a (test-model): server error (HTTP 500)", "b (fake): input too long", "c (fake): cooling down until"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// context_length puts no cooldown; the others do (c keeps its own).
	if _, ok := cooldown(t, sqldb, "b"); ok {
		t.Error("context_length set a cooldown")
	}
	if row, ok := cooldown(t, sqldb, "a"); !ok || row.ConsecutiveFailures != 1 {
		t.Errorf("a cooldown = %+v, %v", row, ok)
	}
	if n := len(h.c.Entries[2].Provider.(*cascade.Fake).Calls()); n != 0 {
		t.Errorf("the cooling provider was called %d times", n)
	}
}

func TestNoEntries(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	_, err := cascade.New(sqldb).Complete(context.Background(), 0, userReq)
	var ce *cascade.Error
	if !errors.As(err, &ce) || len(ce.Causes) != 0 || !strings.Contains(err.Error(), "no provider") {
		t.Fatalf("err = %v", err)
	}
}

func TestCooldownSurvivesReopen(t *testing.T) {
	t.Parallel()
	sqldb, path := openDB(t)
	failing := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, serverError() }}
	h := newHarness(t, sqldb, fakeEntry("local", failing))
	if _, err := h.c.Complete(context.Background(), 0, userReq); err == nil {
		t.Fatal("want a failure")
	}
	sqldb.Close()

	again, err := db.OpenHandle(context.Background(), path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	fresh := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("x")}}
	h2 := newHarness(t, again, fakeEntry("local", fresh))
	st, err := h2.c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].CoolingUntil == nil || !st[0].CoolingUntil.Equal(t0.Add(30*time.Second)) || st[0].ConsecutiveFailures != 1 ||
		!strings.Contains(st[0].LastError, "HTTP 503") {
		t.Fatalf("status after reopen = %+v", st)
	}
	_, err = h2.c.Complete(context.Background(), 0, userReq)
	if !errors.Is(err, cascade.ErrCoolingDown) || len(fresh.Calls()) != 0 {
		t.Fatalf("after reopen: err %v, calls %d; want a skip", err, len(fresh.Calls()))
	}
}

// TestCooldownSeenByAnotherProcess fails a provider here and checks that a second process
// on the same file skips it.
func TestCooldownSeenByAnotherProcess(t *testing.T) {
	t.Parallel()
	sqldb, path := openDB(t)
	failing := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, serverError() }}
	c := cascade.New(sqldb, cascade.Entry{Name: "local", Type: "fake", Model: "m", Provider: failing, Cooldown: time.Hour})
	if _, err := c.Complete(context.Background(), 0, userReq); err == nil {
		t.Fatal("want a failure")
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(testdb.Environ(), "CASCADE_HELPER_DB="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, stderr.String())
	}
	var got helperReport
	line := out
	if i := bytes.IndexByte(out, '\n'); i >= 0 {
		line = out[:i]
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	if got.Status.CoolingUntil == nil || got.Status.ConsecutiveFailures != 1 || !got.CoolingDown || got.Calls != 0 {
		t.Fatalf("helper saw %+v, want the cooldown and a skip", got)
	}
	if until := *got.Status.CoolingUntil; until.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("helper saw cooling_until %v, want about an hour from now", until)
	}
	// The helper's skip is in the shared log.
	rows := attempts(t, sqldb)
	if len(rows) != 2 || cascade.Outcome(rows[1].Outcome) != cascade.OutcomeSkippedCooldown {
		t.Errorf("rows = %+v, want the helper's skip last", rows)
	}
}

type helperReport struct {
	Status      cascade.ProviderStatus `json:"status"`
	CoolingDown bool                   `json:"cooling_down"`
	Calls       int                    `json:"calls"`
	Error       string                 `json:"error"`
}

// TestHelperProcess is the second process of TestCooldownSeenByAnotherProcess.
func TestHelperProcess(t *testing.T) {
	t.Parallel()
	path := os.Getenv("CASCADE_HELPER_DB")
	if path == "" {
		t.Skip("run by TestCooldownSeenByAnotherProcess")
	}
	sqldb, err := db.OpenHandle(context.Background(), path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	f := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("child")}}
	c := cascade.New(sqldb, cascade.Entry{Name: "local", Type: "fake", Model: "m", Provider: f})
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), 0, userReq)
	rep := helperReport{Status: st[0], CoolingDown: errors.Is(err, cascade.ErrCoolingDown), Calls: len(f.Calls())}
	if err != nil {
		rep.Error = err.Error()
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("%s\n", b)
}

// TestConcurrentFailuresBothCount: two processes' handles failing at once both count.
func TestConcurrentFailuresBothCount(t *testing.T) {
	t.Parallel()
	_, path := openDB(t)
	var ready sync.WaitGroup
	ready.Add(2)
	run := func() error {
		sqldb, err := db.OpenHandle(context.Background(), path, db.Options{})
		if err != nil {
			return err
		}
		defer sqldb.Close()
		f := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
			ready.Done()
			ready.Wait() // both have sent their request
			return llm.Response{}, serverError()
		}}
		c := cascade.NewWith(sqldb, cascade.Options{Now: func() time.Time { return t0 }}, fakeEntry("local", f))
		_, err = c.Complete(context.Background(), 0, userReq)
		var pe *cascade.ProviderError
		if !errors.As(err, &pe) || pe.Class != cascade.ClassServer {
			return fmt.Errorf("err = %v, want a server error", err)
		}
		return nil
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- run() }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sqldb, err := db.OpenHandle(context.Background(), path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	row, ok := cooldown(t, sqldb, "local")
	if !ok || row.ConsecutiveFailures != 2 || row.CoolingUntil != t0.Add(60*time.Second).UnixMilli() {
		t.Fatalf("cooldown = %+v, want 2 failures and 60s", row)
	}
}

// TestCooldownEscalation: 30s, 60s, 120s... capped at MaxCooldown, at least Retry-After,
// reset by a success. No sleeping: the clock is injected.
func TestCooldownEscalation(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	var next func() (llm.Response, error)
	f := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return next() }}
	e := fakeEntry("p", f)
	e.Cooldown, e.MaxCooldown = 30*time.Second, 4*time.Minute
	h := newHarness(t, sqldb, e)

	fail := func(retryAfter time.Duration) func() (llm.Response, error) {
		return func() (llm.Response, error) {
			return llm.Response{}, &cascade.ProviderError{Class: cascade.ClassRateLimited, HTTPStatus: 429, RetryAfter: retryAfter, Err: errors.New("slow down")}
		}
	}
	step := func(wantFailures int64, want time.Duration) {
		t.Helper()
		start := h.clock()
		if _, err := h.c.Complete(context.Background(), 0, userReq); err == nil {
			t.Fatal("want a failure")
		}
		row, _ := cooldown(t, sqldb, "p")
		if got := time.UnixMilli(row.CoolingUntil).Sub(start); row.ConsecutiveFailures != wantFailures || got != want {
			t.Fatalf("after failure %d: %d failures, cooldown %v; want %d, %v", wantFailures, row.ConsecutiveFailures, got, wantFailures, want)
		}
		// Still cooling a millisecond before the end: skipped, not called.
		calls := len(f.Calls())
		h.advance(want - time.Millisecond)
		if _, err := h.c.Complete(context.Background(), 0, userReq); !errors.Is(err, cascade.ErrCoolingDown) || len(f.Calls()) != calls {
			t.Fatalf("within the cooldown: %v, %d calls", err, len(f.Calls())-calls)
		}
		h.advance(time.Millisecond)
	}

	next = fail(0)
	for i, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		step(int64(i+1), want)
	}

	next = func() (llm.Response, error) { return llm.Response{Text: "ok"}, nil }
	if _, err := h.c.Complete(context.Background(), 0, userReq); err != nil {
		t.Fatal(err)
	}
	if row, _ := cooldown(t, sqldb, "p"); row.ConsecutiveFailures != 0 || row.CoolingUntil != 0 || row.LastError != "" {
		t.Fatalf("after a success: %+v, want reset", row)
	}

	next = fail(3 * time.Minute) // longer than 30s: Retry-After wins
	step(1, 3*time.Minute)
	next = fail(10 * time.Second) // shorter than 60s
	step(2, time.Minute)
	next = fail(time.Hour) // capped
	step(3, 4*time.Minute)
}

func TestCancelMidRequest(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	got := make(chan struct{}, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("never")}}
	h := newHarness(t, sqldb, openAIEntry("a", srv.URL, func(cfg *cascade.OpenAIConfig, _ *cascade.Entry) { cfg.Timeout = 10 * time.Second }),
		fakeEntry("b", next))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-got
		cancel()
	}()
	start := time.Now()
	_, err := h.c.Complete(ctx, 0, userReq)
	checkCanceled(t, sqldb, err, time.Since(start), next)
	if rows := attempts(t, sqldb); len(rows) != 1 || cascade.Class(rows[0].ErrorClass) != cascade.ClassCanceled || rows[0].Outcome != "error" {
		t.Errorf("rows = %+v, want one canceled attempt", rows)
	}
}

func TestCancelMidBackoff(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, apiError(503, "", "", "busy"))
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("never")}}
	e := openAIEntry("a", srv.URL)
	e.MaxAttempts, e.MaxWait = 3, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	observe := func(ev cascade.Event) {
		if ev.Kind == cascade.EventWait {
			if ev.Wait < 5*time.Second {
				t.Errorf("wait %v, want about 10s", ev.Wait)
			}
			time.AfterFunc(100*time.Millisecond, cancel)
		}
	}
	c := cascade.NewWith(sqldb, cascade.Options{InitialBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second, Observe: observe},
		e, fakeEntry("b", next)) // the real Sleep
	start := time.Now()
	_, err := c.Complete(ctx, 0, userReq)
	checkCanceled(t, sqldb, err, time.Since(start), next)
	if rows := attempts(t, sqldb); len(rows) != 1 || cascade.Class(rows[0].ErrorClass) != cascade.ClassServer {
		t.Errorf("rows = %+v, want the one server error before the wait", rows)
	}
}

func checkCanceled(t *testing.T, sqldb *db.Handle, err error, elapsed time.Duration, next *cascade.Fake) {
	t.Helper()
	if elapsed > time.Second {
		t.Errorf("returned after %v, want promptly", elapsed)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	causes := providerErrors(t, err)
	if len(causes) != 1 || causes[0].Class != cascade.ClassCanceled || causes[0].Provider != "a" {
		t.Fatalf("causes = %v, want a canceled", causes)
	}
	if class, _, _ := cascade.Classify(err); class != cascade.ClassCanceled {
		t.Errorf("Classify = %q", class)
	}
	if n := len(next.Calls()); n != 0 {
		t.Errorf("the next provider was called %d times after a cancel", n)
	}
	if _, ok := cooldown(t, sqldb, "a"); ok {
		t.Error("a cancel set a cooldown")
	}
}

func TestAttemptTimeoutMovesOn(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	slow := &cascade.Fake{Script: []cascade.FakeStep{{Delay: 10 * time.Second, Response: llm.Response{Text: "late"}}}}
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("on time")}}
	h := newHarnessWith(t, sqldb, cascade.Options{AttemptTimeout: 200 * time.Millisecond}, fakeEntry("slow", slow), fakeEntry("next", next))
	start := time.Now()
	res, err := h.c.Complete(context.Background(), 0, userReq)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if res.Provider != "next" || res.Text != "on time" {
		t.Fatalf("result = %+v", res)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 || cascade.Class(rows[0].ErrorClass) != cascade.ClassTimeout || !strings.Contains(rows[0].Error, "attempt timeout of 200ms") {
		t.Fatalf("rows = %+v", rows)
	}
	if row, ok := cooldown(t, sqldb, "slow"); !ok || row.ConsecutiveFailures != 1 {
		t.Errorf("cooldown = %+v, %v", row, ok)
	}
}

// TestRetryAfterBeyondBudget: a wait that would outlast the attempt timeout is not slept.
func TestRetryAfterBeyondBudget(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		apiError(429, "", "", "later")(w, r)
	})
	e := openAIEntry("a", srv.URL)
	e.MaxAttempts, e.Cooldown = 3, time.Second
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("b")}}
	h := newHarnessWith(t, sqldb, cascade.Options{AttemptTimeout: 2 * time.Second}, e, fakeEntry("b", next))
	res, err := h.c.Complete(context.Background(), 0, userReq)
	if err != nil || res.Provider != "b" {
		t.Fatalf("%+v, %v", res, err)
	}
	if w := h.recordedWaits(); len(w) != 0 {
		t.Errorf("waited %v past the budget", w)
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	row, _ := cooldown(t, sqldb, "a")
	if got := time.UnixMilli(row.CoolingUntil).Sub(t0); got != 5*time.Second {
		t.Errorf("cooldown %v, want the Retry-After 5s", got)
	}
}

// TestRunTask runs a task that makes several requests, linked to a compaction.
func TestRunTask(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	compactionID := insertCompaction(t, sqldb)
	f := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("part 1"), {Response: llm.Response{Text: "bad"}}, cascade.FakeReply("part 2")}}
	e := fakeEntry("p", f)
	e.MaxAttempts, e.ContextWindow, e.MaxOutputTokens = 2, 4096, 512
	h := newHarness(t, sqldb, e)
	var target llm.Target
	res, err := h.c.Run(context.Background(), compactionID, func(ctx context.Context, tg llm.Target, k llm.Completer) (string, error) {
		target = tg
		var parts []string
		for i := range 2 {
			resp, err := k.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: fmt.Sprint("chunk ", i)}},
				Accept: func(s string) error {
					if s == "bad" {
						return errors.New("not a summary")
					}
					return nil
				}})
			if err != nil {
				return "", err
			}
			parts = append(parts, resp.Text)
		}
		return strings.Join(parts, " + "), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "part 1 + part 2" || res.Provider != "p" {
		t.Fatalf("result = %+v", res)
	}
	if target != (llm.Target{Name: "p", Model: "fake", ContextWindow: 4096, MaxOutputTokens: 512, Concurrency: 1}) {
		t.Errorf("target = %+v", target)
	}
	rows, err := storeOn(t, sqldb).CompactionAttempts(context.Background(), compactionID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		if r.CompactionID == nil || *r.CompactionID != compactionID {
			t.Errorf("row %+v not linked to compaction %d", r, compactionID)
		}
		got = append(got, r.Outcome+"/"+r.ErrorClass)
	}
	if want := "ok/,error/bad_response,ok/"; strings.Join(got, ",") != want {
		t.Errorf("rows = %s, want %s", strings.Join(got, ","), want)
	}
	if !strings.Contains(rows[1].Error, "not a summary") {
		t.Errorf("rejection text = %q", rows[1].Error)
	}
}

// TestTaskErrors: a task's own error is classified; an empty text is a bad response.
func TestTaskErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		task      llm.Task
		wantClass cascade.Class
		cooldown  bool
	}{
		{"context length", func(context.Context, llm.Target, llm.Completer) (string, error) {
			return "", fmt.Errorf("split: %w", llm.ErrContextLength)
		}, cascade.ClassContextLength, false},
		{"bad response", func(context.Context, llm.Target, llm.Completer) (string, error) {
			return "", fmt.Errorf("summary not smaller: %w", llm.ErrBadResponse)
		}, cascade.ClassBadResponse, true},
		{"empty text", func(context.Context, llm.Target, llm.Completer) (string, error) { return " ", nil }, cascade.ClassBadResponse, true},
		{"wrapped provider error", func(ctx context.Context, _ llm.Target, k llm.Completer) (string, error) {
			_, err := k.Complete(ctx, userReq)
			return "", fmt.Errorf("chunk 2: %w", err)
		}, cascade.ClassServer, true},
		{"unclassified after a failure", func(ctx context.Context, _ llm.Target, k llm.Completer) (string, error) {
			k.Complete(ctx, userReq)
			return "", errors.New("gave up")
		}, cascade.ClassServer, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sqldb, _ := openDB(t)
			f := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, serverError() }}
			next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("next")}}
			h := newHarness(t, sqldb, fakeEntry("p", f), fakeEntry("q", next))
			var sawTask bool
			res, err := h.c.Run(context.Background(), 0, func(ctx context.Context, tg llm.Target, k llm.Completer) (string, error) {
				if tg.Name == "q" {
					resp, err := k.Complete(ctx, userReq)
					return resp.Text, err
				}
				sawTask = true
				return tc.task(ctx, tg, k)
			})
			if err != nil || res.Provider != "q" || !sawTask {
				t.Fatalf("%+v, %v", res, err)
			}
			var fail *cascade.Event
			for _, ev := range h.recordedEvents() {
				if ev.Kind == cascade.EventFail {
					fail = &ev
				}
			}
			if fail == nil || fail.Provider != "p" || fail.Class != tc.wantClass {
				t.Fatalf("fail event = %+v, want class %s", fail, tc.wantClass)
			}
			if _, ok := cooldown(t, sqldb, "p"); ok != tc.cooldown {
				t.Errorf("cooldown set = %v, want %v", ok, tc.cooldown)
			}
		})
	}
}

// TestJSONShapes checks the field names docs/serve.md promises for --json output.
func TestJSONShapes(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	failing := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, serverError() }}
	h := newHarness(t, sqldb, fakeEntry("a", failing),
		cascade.Entry{Name: "b", Type: "openai", Model: "llama3.2", BaseURL: "http://127.0.0.1:11434/v1", ContextWindow: 8192,
			Provider: &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("ok")}}})
	if _, err := h.c.Complete(context.Background(), 0, userReq); err != nil {
		t.Fatal(err)
	}
	st, err := h.c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	want := `[{"name":"a","type":"fake","model":"fake","base_url":"","context_window":0,"cooling_until":"2026-11-29T12:00:30Z","consecutive_failures":1,"last_error":"server error (HTTP 503): error, status code: 503, status: 503 Service Unavailable, message: overloaded"},` +
		`{"name":"b","type":"openai","model":"llama3.2","base_url":"http://127.0.0.1:11434/v1","context_window":8192,"cooling_until":null,"consecutive_failures":0,"last_error":""}]`
	if string(b) != want {
		t.Errorf("providers JSON =\n%s\nwant\n%s", b, want)
	}

	rows, err := storeOn(t, sqldb).Attempts(context.Background(), "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("rows for a = %+v", rows)
	}
	var m map[string]any
	b, _ = json.Marshal(rows[0])
	json.Unmarshal(b, &m)
	for _, k := range []string{"id", "compaction_id", "provider", "model", "outcome", "http_status", "error_class", "error",
		"duration_ms", "prompt_tokens", "completion_tokens", "started_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("attempt JSON %s has no %q", b, k)
		}
	}
	if m["compaction_id"] != nil || m["started_at"] != "2026-11-29T12:00:00Z" || m["http_status"] != float64(503) {
		t.Errorf("attempt JSON = %s", b)
	}
	all, _ := storeOn(t, sqldb).Attempts(context.Background(), "", 0)
	one, _ := storeOn(t, sqldb).Attempts(context.Background(), "", 1)
	if len(all) != 2 || len(one) != 1 || one[0].Provider != "b" {
		t.Errorf("Attempts all = %d rows, limit 1 = %+v (want newest first)", len(all), one)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	f := &cascade.Fake{Script: []cascade.FakeStep{{Err: serverError()}, {Err: serverError()}}}
	e := fakeEntry("a", f)
	e.MaxAttempts = 2
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("b")}}
	h := newHarnessWith(t, sqldb, cascade.Options{InitialBackoff: time.Second, MaxBackoff: time.Second}, e, fakeEntry("b", next))
	if _, err := h.c.Complete(context.Background(), 0, userReq); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range h.recordedEvents() {
		s := fmt.Sprintf("%s:%s:%d/%d:%s", ev.Provider, ev.Kind, ev.Attempt, ev.MaxAttempts, ev.Class)
		if ev.Kind == cascade.EventRetry && (ev.Wait < 500*time.Millisecond || ev.Wait > 1500*time.Millisecond || !strings.Contains(ev.Err, "HTTP 503")) {
			t.Errorf("retry event = %+v", ev)
		}
		if ev.Kind == cascade.EventFail && !ev.CoolingUntil.Equal(t0.Add(30*time.Second)) {
			t.Errorf("fail event = %+v, want the cooldown's end", ev)
		}
		got = append(got, s)
	}
	want := "a:try:1/2: a:retry:1/2:server a:wait:2/2: a:try:2/2: a:fail:0/0:server b:try:1/1: b:ok:0/0:"
	if strings.Join(got, " ") != want {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
