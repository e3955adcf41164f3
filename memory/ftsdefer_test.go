package memory_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// SQLite indexes new messages for search after the commit that appends them (db.Handle's
// indexer); a search indexes what is left first. These tests open a store whose handle runs no
// indexer (db.Options.NoIndexer): what it appends stays unindexed until a search, as after a
// crash between the commit and the indexing.

// unindexedStore opens a store on a new SQLite file whose handle indexes nothing by itself.
func unindexedStore(t *testing.T) (*memory.Store, string) {
	t.Helper()
	testdb.SQLiteOnly(t, "PostgreSQL indexes a message as it commits it")
	ctx := context.Background()
	_, path := storetest.Open(t)
	h, err := db.OpenHandle(ctx, path, db.Options{NoIndexer: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.New(ctx, h, memory.Options{})
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); h.Close() })
	return s, path
}

// rawDB opens the file with no store: what tests read behind the store's back.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+url.PathEscape(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// unindexed returns how many messages are above the mark of what is indexed.
func unindexed(t *testing.T, d *sql.DB) int {
	t.Helper()
	var n int
	if err := d.QueryRow("SELECT count(*) FROM messages WHERE id > (SELECT indexed_id FROM fts_state)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// indexSound checks the message index against the rows it indexes (rank 1: an external-content
// index is checked against its content only when asked) after indexing what is left: a row
// indexed twice, one left out, or one deleted from the index though never indexed fails it.
func indexSound(t *testing.T, s *memory.Store, d *sql.DB) {
	t.Helper()
	if err := s.DB().IndexPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)"); err != nil {
		t.Fatalf("full-text index: %v", err)
	}
}

func hitCount(t *testing.T, s *memory.Store, word string) int {
	t.Helper()
	hits, err := s.Search(context.Background(), word, memory.SearchOptions{Limit: memory.MaxSearchLimit})
	if err != nil {
		t.Fatalf("search %q: %v", word, err)
	}
	return len(hits)
}

func appendText(t *testing.T, s *memory.Store, thread string, texts ...string) {
	t.Helper()
	msgs := make([]chat.Message, len(texts))
	for i, text := range texts {
		msgs[i] = chat.TextMessage([]string{"user", "assistant"}[i%2], text)
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSearchRightAfterAppend: a message appended is found by the search that follows at once,
// on every backend, through a live append (a batch) as through an import.
func TestSearchRightAfterAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	for i := range 5 {
		word := fmt.Sprintf("zebra%d", i)
		if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", "a "+word)}, memory.AppendOptions{Live: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
		if n := hitCount(t, s, word); n != 1 {
			t.Fatalf("search %s right after its append: %d hits, want 1", word, n)
		}
	}
}

// TestSearchIndexesWhatAnotherLeft: messages a store committed without indexing them (its
// process ended first) are found by a search of a second store on the same file, read-only,
// and indexed once.
func TestSearchIndexesWhatAnotherLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := unindexedStore(t)
	appendText(t, s, "a", "walrus one", "walrus two")
	appendText(t, s, "b", "walrus three")
	d := rawDB(t, path)
	if n := unindexed(t, d); n != 3 {
		t.Fatalf("%d messages unindexed after the appends, want 3: the append indexed", n)
	}
	r, err := memory.Open(ctx, path, memory.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := hitCount(t, r, "walrus"); n != 3 {
		t.Fatalf("second store: %d hits, want 3", n)
	}
	if n := unindexed(t, d); n != 0 {
		t.Fatalf("%d messages left unindexed after the search", n)
	}
	if n := hitCount(t, s, "walrus"); n != 3 {
		t.Fatalf("first store: %d hits, want 3", n)
	}
	indexSound(t, s, d)
	if err := r.DB().Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteIndexedAndUnindexed: deleting threads whose messages are indexed, unindexed or
// both leaves the index sound, with none of their words found.
func TestDeleteIndexedAndUnindexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := unindexedStore(t)
	d := rawDB(t, path)
	appendText(t, s, "indexed", "heron indexed")
	appendText(t, s, "both", "heron both one")
	appendText(t, s, "keep", "heron keep one")
	if n := hitCount(t, s, "heron"); n != 3 {
		t.Fatalf("%d hits, want 3", n)
	}
	appendText(t, s, "both", "heron both two")
	appendText(t, s, "pending", "heron pending")
	appendText(t, s, "keep", "heron keep two")
	if n := unindexed(t, d); n != 3 {
		t.Fatalf("%d messages unindexed, want 3", n)
	}
	for _, thread := range []string{"indexed", "both", "pending"} {
		if err := s.DeleteThread(ctx, thread); err != nil {
			t.Fatal(err)
		}
	}
	if n := hitCount(t, s, "heron"); n != 2 {
		t.Fatalf("%d hits after the deletes, want 2 (thread keep)", n)
	}
	indexSound(t, s, d)
	if err := s.DB().Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReusedIDIndexed: SQLite gives a new message the id after the highest left, so deleting
// the newest messages, indexed, makes the next append reuse their ids: it must be indexed all
// the same (the mark of what is indexed comes down with the delete).
func TestReusedIDIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := unindexedStore(t)
	d := rawDB(t, path)
	appendText(t, s, "a", "otter first", "otter second")
	appendText(t, s, "b", "badger first", "badger second")
	if n := hitCount(t, s, "badger"); n != 2 {
		t.Fatalf("%d hits, want 2", n)
	}
	var top int64
	if err := d.QueryRow("SELECT max(id) FROM messages").Scan(&top); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	appendText(t, s, "a", "lynx reused")
	var id int64
	if err := d.QueryRow("SELECT id FROM messages WHERE content = 'lynx reused'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id > top {
		t.Fatalf("new message has id %d, above the deleted %d: the case is not met", id, top)
	}
	if n := hitCount(t, s, "lynx"); n != 1 {
		t.Fatalf("the message with a reused id: %d hits, want 1", n)
	}
	if n := hitCount(t, s, "badger"); n != 0 {
		t.Fatalf("deleted thread still found: %d hits", n)
	}
	indexSound(t, s, d)
}

// TestCopyIndexesDestination: a copy's messages are indexed in the destination when Copy
// returns.
func TestCopyIndexesDestination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := unindexedStore(t)
	appendText(t, src, "a", "puffin one", "puffin two")
	dst, path := unindexedStore(t)
	if _, err := memory.Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	d := rawDB(t, path)
	if n := unindexed(t, d); n != 0 {
		t.Fatalf("%d messages copied but not indexed", n)
	}
	indexSound(t, dst, d)
	if n := hitCount(t, dst, "puffin"); n != 2 {
		t.Fatalf("%d hits in the copy, want 2", n)
	}
}

// TestAppendSearchConcurrent: appends and searches at once (run with -race): each search finds
// every message its writer appended before it, and the index is sound after, as Check of the
// store finds it (on a connection of its pool that searched while others indexed: see
// db.CheckSQLite). Ten stores, one after the other: that check reported a sound index corrupt
// in about one run of ten to twenty.
func TestAppendSearchConcurrent(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		t.Run(fmt.Sprint("store ", round), appendSearchConcurrent)
	}
}

func appendSearchConcurrent(t *testing.T) {
	ctx := context.Background()
	s, path := storetest.Open(t)
	const writers, rounds = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			thread := fmt.Sprintf("w%d", w)
			for i := range rounds {
				word := fmt.Sprintf("kestrel%dx%d", w, i)
				if _, err := s.Append(ctx, thread, []chat.Message{chat.TextMessage("user", word)}, memory.AppendOptions{Live: true}); err != nil {
					errs <- err
					return
				}
				hits, err := s.Search(ctx, word, memory.SearchOptions{})
				if err != nil {
					errs <- err
					return
				}
				if len(hits) != 1 || hits[0].Thread != thread || hits[0].Seq != int64(i+1) {
					errs <- fmt.Errorf("search %s right after its append: %+v", word, hits)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if testdb.Backend() == testdb.SQLite {
		indexSound(t, s, rawDB(t, path))
		if err := s.DB().Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
