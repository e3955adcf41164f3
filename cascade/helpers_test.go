package cascade_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
	_ "github.com/memcascade/memcascade/db/postgres"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// t0 is the injected clock's start.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// freshDB makes openDB's databases: copies of one a handle made, on SQLite.
var freshDB = testdb.NewTemplate(func(path string) error {
	h, err := db.OpenHandle(context.Background(), path, db.Options{})
	if err != nil {
		return err
	}
	return h.Close()
})

// openDB opens a fresh database in the test's temporary directory.
func openDB(t *testing.T) (*db.Handle, string) {
	t.Helper()
	path := freshDB.Name(t, "memctl.db")
	sqldb, err := db.OpenHandle(context.Background(), path, db.Options{})
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { sqldb.Close() })
	return sqldb, path
}

// harness is a cascade with an injected clock, a Sleep that records its waits without
// sleeping, and recorded events.
type harness struct {
	t   *testing.T
	db  *db.Handle
	c   *cascade.Cascade
	mu  sync.Mutex
	now time.Time

	waits  []time.Duration
	events []cascade.Event
}

func newHarness(t *testing.T, sqldb *db.Handle, entries ...cascade.Entry) *harness {
	t.Helper()
	return newHarnessWith(t, sqldb, cascade.Options{}, entries...)
}

// newHarnessWith is newHarness with the cascade's other options opt.
func newHarnessWith(t *testing.T, sqldb *db.Handle, opt cascade.Options, entries ...cascade.Entry) *harness {
	t.Helper()
	return harnessFor(t, sqldb, func(opt cascade.Options) *cascade.Cascade { return cascade.NewWith(sqldb, opt, entries...) }, opt)
}

// harnessFor builds a cascade with build, given opt with the harness's clock, Sleep and
// Observe.
func harnessFor(t *testing.T, sqldb *db.Handle, build func(cascade.Options) *cascade.Cascade, opt cascade.Options) *harness {
	t.Helper()
	h := &harness{t: t, db: sqldb, now: t0}
	opt.Now = func() time.Time {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.now
	}
	opt.Sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		h.waits = append(h.waits, d)
		h.mu.Unlock()
		return ctx.Err()
	}
	opt.Observe = func(ev cascade.Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, ev)
	}
	h.c = build(opt)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) recordedWaits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waits)
}

func (h *harness) recordedEvents() []cascade.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// storeOn is the store over sqldb: a program reads the attempt log the cascade writes through
// the store built on the same database.
func storeOn(t *testing.T, sqldb *db.Handle) *memory.Store {
	t.Helper()
	s, err := memory.New(context.Background(), sqldb, memory.Options{})
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// compactionUsage is the usage of compaction id's attempts, as its report shows it.
func compactionUsage(t *testing.T, sqldb *db.Handle, id int64) (memory.Usage, error) {
	t.Helper()
	r, err := storeOn(t, sqldb).Report(context.Background(), id)
	return r.Usage, err
}

// attempts returns the attempt log oldest first.
func attempts(t *testing.T, sqldb *db.Handle) []memory.Attempt {
	t.Helper()
	rows, err := storeOn(t, sqldb).Attempts(context.Background(), "", 0)
	if err != nil {
		t.Fatalf("Attempts: %v", err)
	}
	slices.Reverse(rows)
	return rows
}

// cooldown returns a provider's cooldown row; ok is false when there is none.
func cooldown(t *testing.T, sqldb *db.Handle, name string) (db.ProviderCooldown, bool) {
	t.Helper()
	row, err := sqldb.Q().GetCooldown(context.Background(), name)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false
	}
	if err != nil {
		t.Fatalf("GetCooldown(%s): %v", name, err)
	}
	return row, true
}

// setCooldown writes a provider's cooldown row.
func setCooldown(t *testing.T, sqldb *db.Handle, name string, until time.Time, failures int64) {
	t.Helper()
	err := sqldb.WithTx(context.Background(), func(q db.Querier) error {
		return q.UpsertCooldown(context.Background(), db.UpsertCooldownParams{
			Provider: name, CoolingUntil: until.UnixMilli(), ConsecutiveFailures: failures,
			LastError: "server error (HTTP 503)", UpdatedAt: until.UnixMilli(),
		})
	})
	if err != nil {
		t.Fatalf("set cooldown: %v", err)
	}
}

// server is an httptest server speaking the OpenAI chat completions API through handle.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, handle http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		s.hits.Add(1)
		// Read the body first: only then does the server notice a client that hangs up,
		// and cancel r.Context().
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// chatJSON is a chat completion response body.
func chatJSON(text, finish string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": finish,
		}},
		"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
	})
	return string(b)
}

func reply(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, chatJSON(text, "stop"))
	}
}

// apiError answers status with an OpenAI error object.
func apiError(status int, code, typ, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
		if code != "" {
			body["code"] = code
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": body})
	}
}

// openAIEntry is an entry for an OpenAI-compatible server at baseURL (without /v1).
func openAIEntry(name, baseURL string, mod ...func(*cascade.OpenAIConfig, *cascade.Entry)) cascade.Entry {
	cfg := cascade.OpenAIConfig{Name: name, BaseURL: baseURL + "/v1", Model: "test-model", Timeout: 5 * time.Second, MaxOutputTokens: 256}
	e := cascade.Entry{Name: name, Type: "openai", Model: cfg.Model, BaseURL: cfg.BaseURL, ContextWindow: 8192,
		MaxAttempts: 2, Cooldown: 30 * time.Second, MaxCooldown: time.Hour}
	for _, m := range mod {
		m(&cfg, &e)
	}
	e.Provider = cascade.NewOpenAI(cfg)
	return e
}

func fakeEntry(name string, f *cascade.Fake) cascade.Entry {
	return cascade.Entry{Name: name, Type: "fake", Model: "fake", Provider: f, MaxAttempts: 1,
		Cooldown: 30 * time.Second, MaxCooldown: time.Hour}
}

// providerErrors returns the *ProviderError causes of err, which must be a *cascade.Error.
func providerErrors(t *testing.T, err error) []*cascade.ProviderError {
	t.Helper()
	var ce *cascade.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *cascade.Error", err, err)
	}
	return ce.Causes
}

// errorTexts returns the Error() text of err and of everything it wraps.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorTexts(e)...)
		}
	}
	return out
}

func insertCompaction(t *testing.T, sqldb *db.Handle) int64 {
	t.Helper()
	return insertCompactionFor(t, sqldb, "t1")
}

// insertCompactionFor inserts a thread and a running compaction of it.
func insertCompactionFor(t *testing.T, sqldb *db.Handle, thread string) int64 {
	t.Helper()
	var id int64
	err := sqldb.WithTx(context.Background(), func(q db.Querier) error {
		if _, err := q.InsertThread(context.Background(), db.InsertThreadParams{ID: thread, Model: "gpt-4o", Encoding: "o200k_base",
			Metadata: "{}", Settings: "{}", CreatedAt: t0.UnixMilli(), UpdatedAt: t0.UnixMilli()}); err != nil {
			return err
		}
		var err error
		id, err = q.InsertCompaction(context.Background(), db.InsertCompactionParams{ThreadID: thread, Status: "running", Reason: "forced", Strategy: "summarize",
			TokenLimit: 1000, CreatedAt: t0.UnixMilli(), UpdatedAt: t0.UnixMilli()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
