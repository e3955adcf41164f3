package memory_test

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// A thread's version changes with everything its active context is made from, whichever Store
// changes it; a live Append appends to the version it is given only, and what it reports
// (entries, encodings, the version after) is what reading the thread again gives.
func TestVersionFollowsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, name := storetest.Open(t)
	other, err := memory.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	v0, err := s.Version(ctx, "v")
	if err != nil || v0.Found {
		t.Fatalf("version of a missing thread: %+v, %v", v0, err)
	}
	storetest.LongThread(t, s, "v", 20, 200)
	v1, _ := s.Version(ctx, "v")
	if !v1.Found || v1.LastSeq != 41 || v1.SameContext(v0) {
		t.Fatalf("after an append: %+v", v1)
	}
	compactOther := func() error {
		limit := 2000
		rep, err := compact.New(other, storetest.ExtractiveCascade(t, other), compact.Settings{}).Compact(ctx, "v",
			compact.Options{Force: true, Override: compact.ThreadSettings{TokenLimit: &limit}})
		if err == nil && rep.Status != memory.StatusApplied {
			err = errors.New(string(rep.Status) + ": " + rep.Detail)
		}
		return err
	}
	changes := []struct {
		what string
		do   func() error
	}{
		{"a compaction", compactOther},
		{"a revert", func() error { _, err := other.Revert(ctx, "v", 0); return err }},
		{"a compaction again", compactOther},
		{"a pin", func() error { _, err := other.Pin(ctx, "v", 3, compact.PinBudget(compact.Settings{})); return err }},
		{"an unpin", func() error { return other.Unpin(ctx, "v", 3) }},
		{"an append", func() error {
			_, err := other.Append(ctx, "v", []chat.Message{chat.TextMessage("user", "more")}, memory.AppendOptions{})
			return err
		}},
	}
	prev := v1
	for _, c := range changes {
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		v, err := s.Version(ctx, "v")
		if err != nil {
			t.Fatal(err)
		}
		if v.SameContext(prev) {
			t.Fatalf("%s by another store left the version as it was: %+v", c.what, v)
		}
		// An append given the version from before the change is refused, writing nothing.
		if _, err := s.Append(ctx, "v", []chat.Message{chat.TextMessage("user", "stale")}, memory.AppendOptions{Live: true, Expect: &prev}); !errors.Is(err, memory.ErrStale) {
			t.Fatalf("append at the version before %s: %v, want ErrStale", c.what, err)
		}
		if again, _ := s.Version(ctx, "v"); again != v {
			t.Fatalf("a refused append changed the version: %+v, then %+v", v, again)
		}
		prev = v
	}
	// Settings change the version, not the context.
	limit := 5000
	if err := compact.SaveThreadSettings(ctx, other, "v", compact.ThreadSettings{TokenLimit: &limit}); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Version(ctx, "v")
	if v == prev || !v.SameContext(prev) {
		t.Fatalf("new settings: %+v after %+v: want other settings, the same context", v, prev)
	}
	if ts, err := compact.ParseThreadSettings("v", []byte(v.Settings)); err != nil || ts.TokenLimit == nil || *ts.TokenLimit != 5000 {
		t.Fatalf("the version's settings: %+v, %v", ts, err)
	}

	// A live Append at the thread's version: what it reports is what a new read gives.
	l, err := s.Active(ctx, "v", memory.ReadOptions{Live: true})
	if err != nil || l.Version != v || len(l.History) != int(v.LastSeq) {
		t.Fatalf("live read: version %+v (want %+v), %d messages, %v", l.Version, v, len(l.History), err)
	}
	add := []chat.Message{chat.TextMessage("user", "a <new> question & more"), chat.TextMessage("assistant", "an answer")}
	ap, err := s.Append(ctx, "v", add, memory.AppendOptions{Live: true, Expect: &l.Version})
	if err != nil {
		t.Fatal(err)
	}
	if !ap.Before.SameContext(v) || ap.After.LastSeq != v.LastSeq+2 {
		t.Fatalf("live Append: before %+v, after %+v", ap.Before, ap.After)
	}
	after, _ := s.Active(ctx, "v", memory.ReadOptions{Live: true})
	if after.Version != ap.After {
		t.Fatalf("the version after the append: reported %+v, read %+v", ap.After, after.Version)
	}
	for i, e := range ap.Entries {
		want, _ := json.Marshal(add[i])
		if string(ap.Raw[i]) != string(want) || e.Seq != v.LastSeq+1+int64(i) {
			t.Fatalf("entry %d: seq %d, raw %s; want seq %d, raw %s", i, e.Seq, ap.Raw[i], v.LastSeq+1+int64(i), want)
		}
	}
	// The context serve extends with the entries (its extend) is the one read: its tests
	// (TestKeptContextIsTheStoredOne) check that.
}

// Appends made at once are committed together on SQLite (group commit): each is all or
// nothing whatever the others do, an invalid one or a stale one fails alone, and every valid
// one is stored once.
func TestConcurrentAppendsEachAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	stale := memory.Version{Found: true, CreatedAt: 1, LastSeq: 99}
	for i := range n {
		wg.Go(func() {
			thread := fmt.Sprintf("g%d", i%10)
			msgs := []chat.Message{chat.TextMessage("user", fmt.Sprintf("hello %d", i)), chat.TextMessage("assistant", fmt.Sprintf("hi %d", i))}
			var expect *memory.Version
			switch i % 4 {
			case 1: // a tool result no call asked for: invalid
				bad := chat.TextMessage("tool", "result")
				bad.ToolCallID = "nope"
				msgs = append(msgs, bad)
			case 2:
				expect = &stale
			}
			_, errs[i] = s.Append(ctx, thread, msgs, memory.AppendOptions{Live: true, Expect: expect})
		})
	}
	wg.Wait()
	want := map[string]int{}
	for i, err := range errs {
		switch i % 4 {
		case 1:
			var ie *memory.InputError
			if !errors.As(err, &ie) || ie.Index != 2 {
				t.Fatalf("append %d (invalid): %v, want an InputError at message 2", i, err)
			}
		case 2:
			if !errors.Is(err, memory.ErrStale) {
				t.Fatalf("append %d (stale): %v, want ErrStale", i, err)
			}
		default:
			if err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			want[fmt.Sprintf("g%d", i%10)] += 2
		}
	}
	for thread, n := range want {
		h, err := s.History(ctx, thread)
		if err != nil || len(h) != n {
			t.Fatalf("thread %s: %d messages, want %d (%v)", thread, len(h), n, err)
		}
		for k := 0; k < len(h); k += 2 {
			if h[k].Message.Role != "user" || h[k+1].Message.Role != "assistant" ||
				strings.TrimPrefix(h[k].Message.Text(), "hello ") != strings.TrimPrefix(h[k+1].Message.Text(), "hi ") {
				t.Fatalf("thread %s: messages %d and %d are not one append's: %q, %q", thread, k+1, k+2, h[k].Message.Text(), h[k+1].Message.Text())
			}
		}
	}
	// The full-text index holds what was committed, once, and nothing of what was rolled
	// back (whose seqs another append of the thread may have taken).
	for i := range n {
		hits, err := s.Search(ctx, fmt.Sprintf("hello %d", i), memory.SearchOptions{Thread: fmt.Sprintf("g%d", i%10)})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if i%4 == 1 || i%4 == 2 {
			want = 0
		}
		if len(hits) != want {
			t.Fatalf("search for append %d's message: %d hits, want %d: %+v", i, len(hits), want, hits)
		}
	}
	if err := s.DB().Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// The appends of one batch are indexed for search after its commit: an append rolled back
// leaves nothing in the index, even when the next append of the batch takes its seqs.
func TestBatchIndexesWhatCommitted(t *testing.T) {
	t.Parallel()
	testdb.SQLiteOnly(t, "group commit: PostgreSQL runs each append as a transaction of its own")
	ctx := context.Background()
	s, path := storetest.Open(t)
	if _, err := s.Append(ctx, "b", []chat.Message{chat.TextMessage("user", "start")}, memory.AppendOptions{Live: true}); err != nil {
		t.Fatal(err)
	}
	queued, release := s.HoldBatches()
	bad := chat.TextMessage("tool", "result")
	bad.ToolCallID = "nope"
	appends := [][]chat.Message{
		{chat.TextMessage("user", "rolledback words"), chat.TextMessage("assistant", "rolledback reply"), bad},
		{chat.TextMessage("user", "committed words"), chat.TextMessage("assistant", "committed reply")},
		{chat.TextMessage("user", "rolledback again")}, // stale: refused once written
		{chat.TextMessage("user", "committed again")},
	}
	errs := make([]error, len(appends))
	var wg sync.WaitGroup
	stale := memory.Version{Found: true, CreatedAt: 1, LastSeq: 99}
	for i, msgs := range appends {
		var expect *memory.Version
		if i == 2 {
			expect = &stale
		}
		wg.Go(func() { _, errs[i] = s.Append(ctx, "b", msgs, memory.AppendOptions{Live: true, Expect: expect}) })
		for queued() < i+1 { // in this order, in one batch
			time.Sleep(time.Millisecond)
		}
	}
	release()
	wg.Wait()
	var ie *memory.InputError
	if !errors.As(errs[0], &ie) || errs[1] != nil || !errors.Is(errs[2], memory.ErrStale) || errs[3] != nil {
		t.Fatalf("appends: %v", errs)
	}
	if h, _ := s.History(ctx, "b"); len(h) != 4 || h[1].Message.Text() != "committed words" {
		t.Fatalf("history: %+v", h)
	}
	for word, want := range map[string]int{"rolledback": 0, "committed": 3, "start": 1} {
		if hits, err := s.Search(ctx, word, memory.SearchOptions{}); err != nil || len(hits) != want {
			t.Fatalf("search %q: %d hits, want %d (%v): %+v", word, len(hits), want, err, hits)
		}
	}
	// The index against the rows it indexes (rank 1: an external-content index is checked
	// against its content only when asked): a row indexed twice fails it.
	sqldb, err := sql.Open("sqlite", "file:"+url.PathEscape(path))
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	if _, err := sqldb.ExecContext(ctx, "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)"); err != nil {
		t.Fatal(err)
	}
}

// An append that creates its thread reports the thread as a live read reads it after the
// append (memctl serve keeps it without reading the new thread again; its messages as
// appended, here each as stored), with the settings it was created with; one to an existing
// thread reports none, and leaves its settings as they are.
func TestAppendLiveReportsCreatedThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "run", Arguments: `{"cmd":"go test"}`}}}}
	msgs := []chat.Message{chat.TextMessage("system", "You are a coding agent."), chat.TextMessage("user", "run the tests <now> & \u00e9"),
		call, {Role: "tool", ToolCallID: "c1", Content: json.RawMessage(`"ok \u00e9 é"`)}, {Role: "user", Name: "ann", Content: json.RawMessage(`[{"type":"text","text":"and?"}]`)}}
	for _, settings := range []json.RawMessage{nil, json.RawMessage(`{"window":{"model":"gpt-4o","tokens":1000}}`)} {
		thread := fmt.Sprintf("new-%d", len(settings))
		ap, err := s.Append(ctx, thread, msgs, memory.AppendOptions{Model: "gpt-4o", Settings: settings, Live: true, Expect: &memory.Version{}})
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Active(ctx, thread, memory.ReadOptions{Live: true})
		if err != nil {
			t.Fatal(err)
		}
		if ap.Read == nil || !reflect.DeepEqual(*ap.Read, l) {
			t.Fatalf("created: %+v\nread after: %+v", ap.Read, l)
		}
		if want := cmp.Or(string(settings), "{}"); string(l.Thread.Settings) != want || l.Version.Settings != want {
			t.Fatalf("settings %s, version's %s; want %s", l.Thread.Settings, l.Version.Settings, want)
		}
		ap, err = s.Append(ctx, thread, []chat.Message{chat.TextMessage("assistant", "done")}, memory.AppendOptions{Live: true, Settings: json.RawMessage(`{"x":1}`)})
		if err != nil || ap.Read != nil {
			t.Fatalf("append to an existing thread: created %+v, %v", ap.Read, err)
		}
		if ap.After.Settings != cmp.Or(string(settings), "{}") {
			t.Fatalf("an append to an existing thread changed its settings: %s", ap.After.Settings)
		}
	}
	if _, err := s.Append(ctx, "bad", msgs[:1], memory.AppendOptions{Settings: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("settings not an object: no error")
	}
}

// TestReadOptions: a live read of a thread that does not exist is ErrThreadNotFound, as any
// read; Live with Light, Live on Messages and two ReadOptions are errors naming the thread.
func TestReadOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Active(ctx, "none", memory.ReadOptions{Live: true}); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("live read of no thread: %v, want ErrThreadNotFound", err)
	}
	if _, err := s.Append(ctx, "r", []chat.Message{chat.TextMessage("user", "hello")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Active(ctx, "r", memory.ReadOptions{Live: true})
	if err != nil || !a.Version.Found || len(a.History) != 1 || len(a.Entries) != 1 {
		t.Fatalf("live read: %+v, %v", a, err)
	}
	if a, err := s.Active(ctx, "r"); err != nil || a.Version.Found || a.History != nil {
		t.Fatalf("a read that is not live: version %+v, history %v, %v", a.Version, a.History, err)
	}
	for name, read := range map[string]func() error{
		"Live and Light": func() error { _, err := s.Active(ctx, "r", memory.ReadOptions{Live: true, Light: true}); return err },
		"Live Messages":  func() error { _, err := s.Messages(ctx, "r", 1, 1, memory.ReadOptions{Live: true}); return err },
		"two options": func() error {
			_, err := s.Active(ctx, "r", memory.ReadOptions{}, memory.ReadOptions{Light: true})
			return err
		},
	} {
		if err := read(); err == nil || !strings.Contains(err.Error(), `"r"`) || !strings.Contains(err.Error(), "ReadOptions") {
			t.Errorf("%s: %v, want an error naming the thread and ReadOptions", name, err)
		}
	}
}
