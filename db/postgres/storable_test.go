package postgres

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/memcascade/memcascade/db"
)

// recorder is a Querier that records what reaches it; a query it does not define panics (its
// embedded Querier is nil), so a lookup that storable should answer itself fails the test.
type recorder struct {
	db.Querier
	got []string
}

func (r *recorder) GetThread(_ context.Context, id string) (db.Thread, error) {
	r.got = append(r.got, id)
	return db.Thread{ID: id}, nil
}

func (r *recorder) InsertAttempt(_ context.Context, arg db.InsertAttemptParams) (int64, error) {
	r.got = append(r.got, arg.Provider, arg.Error)
	return 1, nil
}

func (r *recorder) ApplyCompaction(_ context.Context, arg db.ApplyCompactionParams) (int64, error) {
	r.got = append(r.got, arg.Summary.String, arg.Error)
	return 1, nil
}

// TestStorableLookups: a lookup by an id PostgreSQL's text cannot hold finds nothing without
// reaching the server, in the shape of its result (no row, an empty list, nothing changed);
// a storable id reaches it.
func TestStorableLookups(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	s := storable{r}
	for _, id := range []string{"a\x00b", "a\xffb"} {
		if _, err := s.GetThread(ctx, id); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("GetThread(%q): %v, want sql.ErrNoRows", id, err)
		}
		if got, err := s.ListMessages(ctx, id); err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListMessages(%q) = %#v, %v, want an empty list", id, got, err)
		}
		if got, err := s.SearchMessages(ctx, db.SearchMessagesParams{ThreadID: id, Query: "'x'"}); err != nil || got == nil || len(got) != 0 {
			t.Errorf("SearchMessages(thread %q) = %#v, %v, want an empty list", id, got, err)
		}
		if n, err := s.DeleteThread(ctx, id); err != nil || n != 0 {
			t.Errorf("DeleteThread(%q) = %d, %v, want 0, nil", id, n, err)
		}
		if n, err := s.ResetCooldown(ctx, db.ResetCooldownParams{Provider: id}); err != nil || n != 0 {
			t.Errorf("ResetCooldown(%q) = %d, %v, want 0, nil", id, n, err)
		}
	}
	if len(r.got) != 0 {
		t.Fatalf("unstorable ids reached the queries: %q", r.got)
	}
	if th, err := s.GetThread(ctx, "t-1"); err != nil || th.ID != "t-1" || len(r.got) != 1 {
		t.Errorf("GetThread(t-1) = %+v, %v, calls %q: want the query run", th, err, r.got)
	}
}

// TestStorableWrites: outside text written by a query is made storable; the other arguments
// are passed as given.
func TestStorableWrites(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	s := storable{r}
	if _, err := s.InsertAttempt(ctx, db.InsertAttemptParams{Provider: "p", Error: "bad\x00\xffend"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyCompaction(ctx, db.ApplyCompactionParams{Summary: sql.NullString{String: "s\x00", Valid: true}, Error: "ok"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"p", "bad\uFFFD\uFFFDend", "s\uFFFD", "ok"}
	if len(r.got) != len(want) {
		t.Fatalf("got %q, want %q", r.got, want)
	}
	for i := range want {
		if r.got[i] != want[i] {
			t.Errorf("argument %d: %q, want %q", i, r.got[i], want[i])
		}
	}
}
