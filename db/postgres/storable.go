package postgres

import (
	"context"
	"database/sql"
	"reflect"

	"github.com/memcascade/memcascade/db"
)

// storable is the one place that decides what a query does with text PostgreSQL's text cannot
// hold (a NUL character, bytes that are not UTF-8; db.Storable): it wraps the adapter, and
// each query it names below is either
//
//   - a lookup by an id (a thread's, a provider's): rows are written with storable ids only,
//     so an id that is not storable names no row and the lookup finds nothing without being
//     sent (find: no row, an empty list, nothing changed), as on SQLite, instead of failing;
//   - a write of text that comes from outside (a provider's error, a summary): the text is
//     written through db.MakeStorable.
//
// Every other query of db.Querier passes through to the adapter unchanged.
type storable struct{ db.Querier }

// Lookups by an id.

func (s storable) CurrentCompaction(ctx context.Context, threadID string) (db.Compaction, error) {
	return find(ctx, threadID, threadID, s.Querier.CurrentCompaction)
}

func (s storable) DeletePins(ctx context.Context, arg db.DeletePinsParams) (int64, error) {
	return find(ctx, arg.ThreadID, arg, s.Querier.DeletePins)
}

func (s storable) DeleteThread(ctx context.Context, id string) (int64, error) {
	return find(ctx, id, id, s.Querier.DeleteThread)
}

func (s storable) GetCooldown(ctx context.Context, provider string) (db.ProviderCooldown, error) {
	return find(ctx, provider, provider, s.Querier.GetCooldown)
}

func (s storable) GetThread(ctx context.Context, id string) (db.Thread, error) {
	return find(ctx, id, id, s.Querier.GetThread)
}

func (s storable) LatestSettledCompaction(ctx context.Context, threadID string) (db.Compaction, error) {
	return find(ctx, threadID, threadID, s.Querier.LatestSettledCompaction)
}

func (s storable) ListAttempts(ctx context.Context, arg db.ListAttemptsParams) ([]db.CascadeAttempt, error) {
	return find(ctx, arg.Provider, arg, s.Querier.ListAttempts)
}

func (s storable) ListCompactions(ctx context.Context, arg db.ListCompactionsParams) ([]db.Compaction, error) {
	return find(ctx, arg.ThreadID, arg, s.Querier.ListCompactions)
}

func (s storable) ListMessages(ctx context.Context, threadID string) ([]db.Message, error) {
	return find(ctx, threadID, threadID, s.Querier.ListMessages)
}

func (s storable) ListPins(ctx context.Context, threadID string) ([]db.Pin, error) {
	return find(ctx, threadID, threadID, s.Querier.ListPins)
}

func (s storable) ListThreads(ctx context.Context, only string) ([]db.ListThreadsRow, error) {
	return find(ctx, only, only, s.Querier.ListThreads)
}

func (s storable) LockThread(ctx context.Context, id string) (db.Thread, error) {
	return find(ctx, id, id, s.Querier.LockThread)
}

func (s storable) ResetCooldown(ctx context.Context, arg db.ResetCooldownParams) (int64, error) {
	return find(ctx, arg.Provider, arg, s.Querier.ResetCooldown)
}

func (s storable) SearchMessages(ctx context.Context, arg db.SearchMessagesParams) ([]db.SearchMessagesRow, error) {
	return find(ctx, arg.ThreadID, arg, s.Querier.SearchMessages)
}

func (s storable) SearchSummaries(ctx context.Context, arg db.SearchSummariesParams) ([]db.SearchSummariesRow, error) {
	return find(ctx, arg.ThreadID, arg, s.Querier.SearchSummaries)
}

func (s storable) ThreadVersion(ctx context.Context, id string) (db.ThreadVersionRow, error) {
	return find(ctx, id, id, s.Querier.ThreadVersion)
}

// Writes of outside text.

func (s storable) ApplyCompaction(ctx context.Context, arg db.ApplyCompactionParams) (int64, error) {
	clean(&arg.Summary.String, &arg.Error)
	return s.Querier.ApplyCompaction(ctx, arg)
}

func (s storable) FinishCompaction(ctx context.Context, arg db.FinishCompactionParams) (int64, error) {
	clean(&arg.Error, &arg.Detail)
	return s.Querier.FinishCompaction(ctx, arg)
}

func (s storable) InsertAttempt(ctx context.Context, arg db.InsertAttemptParams) (int64, error) {
	clean(&arg.Error)
	return s.Querier.InsertAttempt(ctx, arg)
}

func (s storable) InsertCompaction(ctx context.Context, arg db.InsertCompactionParams) (int64, error) {
	clean(&arg.Error, &arg.Detail)
	return s.Querier.InsertCompaction(ctx, arg)
}

func (s storable) SetCompactionStatus(ctx context.Context, arg db.SetCompactionStatusParams) (int64, error) {
	clean(&arg.Error)
	return s.Querier.SetCompactionStatus(ctx, arg)
}

func (s storable) UpsertCooldown(ctx context.Context, arg db.UpsertCooldownParams) error {
	clean(&arg.LastError)
	return s.Querier.UpsertCooldown(ctx, arg)
}

// find runs query with arg unless id, the id it looks up, is not storable: then it finds
// nothing (nothing).
func find[A, R any](ctx context.Context, id string, arg A, query func(context.Context, A) (R, error)) (R, error) {
	if !db.Storable(id) {
		return nothing[R]()
	}
	return query(ctx, arg)
}

// nothing is what a query of result R returns when it finds nothing, as sqlc's queries do: an
// empty list for a list, 0 rows changed for a count, sql.ErrNoRows for a single row.
func nothing[R any]() (R, error) {
	var zero R
	switch t := reflect.TypeFor[R](); t.Kind() {
	case reflect.Slice:
		return reflect.MakeSlice(t, 0, 0).Interface().(R), nil
	case reflect.Int64:
		return zero, nil
	}
	return zero, sql.ErrNoRows
}

// clean makes each text storable (db.MakeStorable) in place.
func clean(texts ...*string) {
	for _, s := range texts {
		*s = db.MakeStorable(*s)
	}
}
