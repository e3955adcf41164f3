package pg

import (
	"testing"

	"github.com/memcascade/memcascade/db"
)

// Every parameter, row and model type of this package converts to the type of the same name in
// package db (same fields, same types, same order): code written against db's queries can call
// these through a plain conversion. A query changed on one side only stops this compiling.
func TestTypesConvertToDB(t *testing.T) {
	converted := []any{
		db.ApplyCompactionParams(ApplyCompactionParams{}),
		db.ApplyViewParams(ApplyViewParams{}),
		db.CascadeAttempt(CascadeAttempt{}),
		db.Compaction(Compaction{}),
		db.CompactionUsageRow(CompactionUsageRow{}),
		db.CopyAttemptParams(CopyAttemptParams{}),
		db.CopyCompactionParams(CopyCompactionParams{}),
		db.CopyCooldownParams(CopyCooldownParams{}),
		db.CopyThreadParams(CopyThreadParams{}),
		db.FinishCompactionParams(FinishCompactionParams{}),
		db.InsertAttemptParams(InsertAttemptParams{}),
		db.InsertCompactionParams(InsertCompactionParams{}),
		db.InsertMessageParams(InsertMessageParams{}),
		db.InsertThreadParams(InsertThreadParams{}),
		db.ListAttemptsParams(ListAttemptsParams{}),
		db.ListCompactionsParams(ListCompactionsParams{}),
		db.ListMessageColumnsAfterParams(ListMessageColumnsAfterParams{}),
		db.ListMessageColumnsAfterRow(ListMessageColumnsAfterRow{}),
		db.ListMessageColumnsBeforeParams(ListMessageColumnsBeforeParams{}),
		db.ListMessageColumnsBeforeRow(ListMessageColumnsBeforeRow{}),
		db.ListMessageColumnsBetweenParams(ListMessageColumnsBetweenParams{}),
		db.ListMessageColumnsBetweenRow(ListMessageColumnsBetweenRow{}),
		db.ListMessagesAfterParams(ListMessagesAfterParams{}),
		db.ListMessagesBeforeParams(ListMessagesBeforeParams{}),
		db.ListMessagesBetweenParams(ListMessagesBetweenParams{}),
		db.ListThreadsRow(ListThreadsRow{}),
		db.MarkInterruptedParams(MarkInterruptedParams{}),
		db.Message(Message{}),
		db.ProviderCooldown(ProviderCooldown{}),
		db.PrunableCompactionsRow(PrunableCompactionsRow{}),
		db.RenewLeaseParams(RenewLeaseParams{}),
		db.ResetCooldownParams(ResetCooldownParams{}),
		db.SearchMessagesParams(SearchMessagesParams{}),
		db.SearchMessagesRow(SearchMessagesRow{}),
		db.SearchSummariesParams(SearchSummariesParams{}),
		db.SearchSummariesRow(SearchSummariesRow{}),
		db.SetCompactionStatusParams(SetCompactionStatusParams{}),
		db.SetContextWindowParams(SetContextWindowParams{}),
		db.SetThreadSettingsParams(SetThreadSettingsParams{}),
		db.SetThreadTailParams(SetThreadTailParams{}),
		db.Thread(Thread{}),
		db.UpsertCooldownParams(UpsertCooldownParams{}),
	}
	if len(converted) == 0 {
		t.Fatal("no types")
	}
}
