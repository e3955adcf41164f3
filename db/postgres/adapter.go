package postgres

import (
	"context"
	"database/sql"

	"github.com/memcascade/memcascade/db"
)

// adapter answers package db's Querier with this package's queries. Every parameter and row
// type converts to db's by a plain conversion (this file compiles only while they do): only the
// queries whose SQL differs in kind need more than that: the searches (their query is a tsquery, built by Match). What a query does with
// text PostgreSQL cannot hold is decided by the wrapper storable, around it.
type adapter struct{ q *Queries }

var _ db.Querier = adapter{}

// convert converts the rows of a list query.
func convert[T, U any](rows []T, err error, conv func(T) U) ([]U, error) {
	if err != nil {
		return nil, err
	}
	out := make([]U, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out, nil
}

func (a adapter) SearchMessages(ctx context.Context, arg db.SearchMessagesParams) ([]db.SearchMessagesRow, error) {
	r, err := a.q.SearchMessages(ctx, SearchMessagesParams(arg))
	return convert(r, err, func(x SearchMessagesRow) db.SearchMessagesRow { return db.SearchMessagesRow(x) })
}

func (a adapter) SearchSummaries(ctx context.Context, arg db.SearchSummariesParams) ([]db.SearchSummariesRow, error) {
	r, err := a.q.SearchSummaries(ctx, SearchSummariesParams(arg))
	return convert(r, err, func(x SearchSummariesRow) db.SearchSummariesRow { return db.SearchSummariesRow(x) })
}

func (a adapter) ApplyCompaction(ctx context.Context, arg db.ApplyCompactionParams) (int64, error) {
	return a.q.ApplyCompaction(ctx, ApplyCompactionParams(arg))
}

func (a adapter) ApplyView(ctx context.Context, arg db.ApplyViewParams) (int64, error) {
	return a.q.ApplyView(ctx, ApplyViewParams(arg))
}

func (a adapter) CompactionUsage(ctx context.Context, compactionID sql.NullInt64) (db.CompactionUsageRow, error) {
	r, err := a.q.CompactionUsage(ctx, compactionID)
	return db.CompactionUsageRow(r), err
}

func (a adapter) CountLooseAttempts(ctx context.Context, before int64) (int64, error) {
	return a.q.CountLooseAttempts(ctx, before)
}

func (a adapter) CurrentCompaction(ctx context.Context, threadID string) (db.Compaction, error) {
	r, err := a.q.CurrentCompaction(ctx, threadID)
	return db.Compaction(r), err
}

func (a adapter) DeleteLooseAttempts(ctx context.Context, before int64) (int64, error) {
	return a.q.DeleteLooseAttempts(ctx, before)
}

func (a adapter) DeletePrunableCompaction(ctx context.Context, id int64) (int64, error) {
	return a.q.DeletePrunableCompaction(ctx, id)
}

func (a adapter) DeleteThread(ctx context.Context, id string) (int64, error) {
	return a.q.DeleteThread(ctx, id)
}

func (a adapter) FinishCompaction(ctx context.Context, arg db.FinishCompactionParams) (int64, error) {
	return a.q.FinishCompaction(ctx, FinishCompactionParams(arg))
}

func (a adapter) GetCompaction(ctx context.Context, id int64) (db.Compaction, error) {
	r, err := a.q.GetCompaction(ctx, id)
	return db.Compaction(r), err
}

func (a adapter) GetCooldown(ctx context.Context, provider string) (db.ProviderCooldown, error) {
	r, err := a.q.GetCooldown(ctx, provider)
	return db.ProviderCooldown(r), err
}

func (a adapter) GetThread(ctx context.Context, id string) (db.Thread, error) {
	r, err := a.q.GetThread(ctx, id)
	return db.Thread(r), err
}

func (a adapter) InsertAttempt(ctx context.Context, arg db.InsertAttemptParams) (int64, error) {
	return a.q.InsertAttempt(ctx, InsertAttemptParams(arg))
}

func (a adapter) InsertCompaction(ctx context.Context, arg db.InsertCompactionParams) (int64, error) {
	return a.q.InsertCompaction(ctx, InsertCompactionParams(arg))
}

func (a adapter) InsertMessage(ctx context.Context, arg db.InsertMessageParams) error {
	return a.q.InsertMessage(ctx, InsertMessageParams(arg))
}

func (a adapter) InsertThread(ctx context.Context, arg db.InsertThreadParams) (int64, error) {
	return a.q.InsertThread(ctx, InsertThreadParams(arg))
}

func (a adapter) CompactionLedger(ctx context.Context, id int64) (db.CompactionLedgerRow, error) {
	r, err := a.q.CompactionLedger(ctx, id)
	return db.CompactionLedgerRow(r), err
}

func (a adapter) LatestSettledCompaction(ctx context.Context, threadID string) (db.Compaction, error) {
	r, err := a.q.LatestSettledCompaction(ctx, threadID)
	return db.Compaction(r), err
}

func (a adapter) ListAttempts(ctx context.Context, arg db.ListAttemptsParams) ([]db.CascadeAttempt, error) {
	r, err := a.q.ListAttempts(ctx, ListAttemptsParams(arg))
	return convert(r, err, func(x CascadeAttempt) db.CascadeAttempt { return db.CascadeAttempt(x) })
}

func (a adapter) ListCompactionAttempts(ctx context.Context, compactionID sql.NullInt64) ([]db.CascadeAttempt, error) {
	r, err := a.q.ListCompactionAttempts(ctx, compactionID)
	return convert(r, err, func(x CascadeAttempt) db.CascadeAttempt { return db.CascadeAttempt(x) })
}

func (a adapter) ListCompactions(ctx context.Context, arg db.ListCompactionsParams) ([]db.Compaction, error) {
	r, err := a.q.ListCompactions(ctx, ListCompactionsParams(arg))
	return convert(r, err, func(x Compaction) db.Compaction { return db.Compaction(x) })
}

func (a adapter) ListCooldowns(ctx context.Context) ([]db.ProviderCooldown, error) {
	r, err := a.q.ListCooldowns(ctx)
	return convert(r, err, func(x ProviderCooldown) db.ProviderCooldown { return db.ProviderCooldown(x) })
}

func (a adapter) ListMessageColumnsAfter(ctx context.Context, arg db.ListMessageColumnsAfterParams) ([]db.ListMessageColumnsAfterRow, error) {
	r, err := a.q.ListMessageColumnsAfter(ctx, ListMessageColumnsAfterParams(arg))
	return convert(r, err, func(x ListMessageColumnsAfterRow) db.ListMessageColumnsAfterRow {
		return db.ListMessageColumnsAfterRow(x)
	})
}

func (a adapter) ListMessageColumnsBefore(ctx context.Context, arg db.ListMessageColumnsBeforeParams) ([]db.ListMessageColumnsBeforeRow, error) {
	r, err := a.q.ListMessageColumnsBefore(ctx, ListMessageColumnsBeforeParams(arg))
	return convert(r, err, func(x ListMessageColumnsBeforeRow) db.ListMessageColumnsBeforeRow {
		return db.ListMessageColumnsBeforeRow(x)
	})
}

func (a adapter) ListMessageColumnsBetween(ctx context.Context, arg db.ListMessageColumnsBetweenParams) ([]db.ListMessageColumnsBetweenRow, error) {
	r, err := a.q.ListMessageColumnsBetween(ctx, ListMessageColumnsBetweenParams(arg))
	return convert(r, err, func(x ListMessageColumnsBetweenRow) db.ListMessageColumnsBetweenRow {
		return db.ListMessageColumnsBetweenRow(x)
	})
}

func (a adapter) ListMessages(ctx context.Context, threadID string) ([]db.Message, error) {
	r, err := a.q.ListMessages(ctx, threadID)
	return convert(r, err, func(x Message) db.Message { return db.Message(x) })
}

func (a adapter) ListMessagesAfter(ctx context.Context, arg db.ListMessagesAfterParams) ([]db.Message, error) {
	r, err := a.q.ListMessagesAfter(ctx, ListMessagesAfterParams(arg))
	return convert(r, err, func(x Message) db.Message { return db.Message(x) })
}

func (a adapter) ListMessagesBefore(ctx context.Context, arg db.ListMessagesBeforeParams) ([]db.Message, error) {
	r, err := a.q.ListMessagesBefore(ctx, ListMessagesBeforeParams(arg))
	return convert(r, err, func(x Message) db.Message { return db.Message(x) })
}

func (a adapter) ListMessagesBetween(ctx context.Context, arg db.ListMessagesBetweenParams) ([]db.Message, error) {
	r, err := a.q.ListMessagesBetween(ctx, ListMessagesBetweenParams(arg))
	return convert(r, err, func(x Message) db.Message { return db.Message(x) })
}

func (a adapter) ListRunningCompactions(ctx context.Context) ([]db.Compaction, error) {
	r, err := a.q.ListRunningCompactions(ctx)
	return convert(r, err, func(x Compaction) db.Compaction { return db.Compaction(x) })
}

func (a adapter) ListThreads(ctx context.Context, only string) ([]db.ListThreadsRow, error) {
	r, err := a.q.ListThreads(ctx, only)
	return convert(r, err, func(x ListThreadsRow) db.ListThreadsRow { return db.ListThreadsRow(x) })
}

func (a adapter) LockThread(ctx context.Context, id string) (db.Thread, error) {
	r, err := a.q.LockThread(ctx, id)
	return db.Thread(r), err
}

func (a adapter) MarkInterrupted(ctx context.Context, arg db.MarkInterruptedParams) (int64, error) {
	return a.q.MarkInterrupted(ctx, MarkInterruptedParams(arg))
}

func (a adapter) PrunableCompactions(ctx context.Context, before int64) ([]db.PrunableCompactionsRow, error) {
	r, err := a.q.PrunableCompactions(ctx, before)
	return convert(r, err, func(x PrunableCompactionsRow) db.PrunableCompactionsRow { return db.PrunableCompactionsRow(x) })
}

func (a adapter) RenewLease(ctx context.Context, arg db.RenewLeaseParams) (int64, error) {
	return a.q.RenewLease(ctx, RenewLeaseParams(arg))
}

func (a adapter) ResetAllCooldowns(ctx context.Context, updatedAt int64) (int64, error) {
	return a.q.ResetAllCooldowns(ctx, updatedAt)
}

func (a adapter) ResetCooldown(ctx context.Context, arg db.ResetCooldownParams) (int64, error) {
	return a.q.ResetCooldown(ctx, ResetCooldownParams(arg))
}

func (a adapter) SetCompactionStatus(ctx context.Context, arg db.SetCompactionStatusParams) (int64, error) {
	return a.q.SetCompactionStatus(ctx, SetCompactionStatusParams(arg))
}

func (a adapter) SetContextWindow(ctx context.Context, arg db.SetContextWindowParams) error {
	return a.q.SetContextWindow(ctx, SetContextWindowParams(arg))
}

func (a adapter) SetThreadMetadata(ctx context.Context, arg db.SetThreadMetadataParams) (int64, error) {
	return a.q.SetThreadMetadata(ctx, SetThreadMetadataParams(arg))
}

func (a adapter) SetThreadSettings(ctx context.Context, arg db.SetThreadSettingsParams) (int64, error) {
	return a.q.SetThreadSettings(ctx, SetThreadSettingsParams(arg))
}

func (a adapter) SetCompactionTokens(ctx context.Context, id int64) error {
	return a.q.SetCompactionTokens(ctx, id)
}

func (a adapter) SetThreadTail(ctx context.Context, arg db.SetThreadTailParams) error {
	return a.q.SetThreadTail(ctx, SetThreadTailParams(arg))
}

func (a adapter) AddReplyUsage(ctx context.Context, arg db.AddReplyUsageParams) error {
	return a.q.AddReplyUsage(ctx, AddReplyUsageParams(arg))
}

func (a adapter) UpsertCooldown(ctx context.Context, arg db.UpsertCooldownParams) error {
	return a.q.UpsertCooldown(ctx, UpsertCooldownParams(arg))
}

// The queries of a copy between databases (copy.sql).

func (a adapter) CopyAttempt(ctx context.Context, arg db.CopyAttemptParams) error {
	return a.q.CopyAttempt(ctx, CopyAttemptParams(arg))
}

func (a adapter) CopyCompaction(ctx context.Context, arg db.CopyCompactionParams) error {
	return a.q.CopyCompaction(ctx, CopyCompactionParams(arg))
}

func (a adapter) CopyCooldown(ctx context.Context, arg db.CopyCooldownParams) error {
	return a.q.CopyCooldown(ctx, CopyCooldownParams(arg))
}

func (a adapter) CopyThread(ctx context.Context, arg db.CopyThreadParams) error {
	return a.q.CopyThread(ctx, CopyThreadParams(arg))
}

func (a adapter) ListAllAttempts(ctx context.Context) ([]db.CascadeAttempt, error) {
	r, err := a.q.ListAllAttempts(ctx)
	return convert(r, err, func(x CascadeAttempt) db.CascadeAttempt { return db.CascadeAttempt(x) })
}

func (a adapter) ListAllCompactions(ctx context.Context) ([]db.Compaction, error) {
	r, err := a.q.ListAllCompactions(ctx)
	return convert(r, err, func(x Compaction) db.Compaction { return db.Compaction(x) })
}

func (a adapter) ListAllThreads(ctx context.Context) ([]db.Thread, error) {
	r, err := a.q.ListAllThreads(ctx)
	return convert(r, err, func(x Thread) db.Thread { return db.Thread(x) })
}

func (a adapter) ListAttemptIDs(ctx context.Context) ([]int64, error) {
	return a.q.ListAttemptIDs(ctx)
}

func (a adapter) ListCompactionIDs(ctx context.Context) ([]int64, error) {
	return a.q.ListCompactionIDs(ctx)
}

func (a adapter) ResetIDSequences(ctx context.Context) error {
	return a.q.ResetIDSequences(ctx)
}

func (a adapter) InsertPin(ctx context.Context, arg db.InsertPinParams) error {
	return a.q.InsertPin(ctx, InsertPinParams(arg))
}

func (a adapter) DeletePins(ctx context.Context, arg db.DeletePinsParams) (int64, error) {
	return a.q.DeletePins(ctx, DeletePinsParams(arg))
}

func (a adapter) ListPins(ctx context.Context, threadID string) ([]db.Pin, error) {
	r, err := a.q.ListPins(ctx, threadID)
	return convert(r, err, func(x Pin) db.Pin { return db.Pin(x) })
}

func (a adapter) ListAllPins(ctx context.Context) ([]db.Pin, error) {
	r, err := a.q.ListAllPins(ctx)
	return convert(r, err, func(x Pin) db.Pin { return db.Pin(x) })
}

func (a adapter) ThreadVersion(ctx context.Context, id string) (db.ThreadVersionRow, error) {
	r, err := a.q.ThreadVersion(ctx, id)
	return db.ThreadVersionRow(r), err
}

// queries answers db.Querier with q: the adapter, in the wrapper storable.
func queries(q *Queries) db.Querier { return storable{adapter{q}} }

// unwrap returns the queries of a Querier made by queries.
func unwrap(q db.Querier) *Queries { return q.(storable).Querier.(adapter).q }
