package compact_test

import (
	"context"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestReportShowsAppendedApart: messages appended while a compaction runs are reported apart
// from what the compaction made of the messages it saw: tokens_after is under tokens_before
// (the compaction shrank the context), and tokens_after + tokens_appended is the context now.
func TestReportShowsAppendedApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 30, 400)
	offline := storetest.ExtractiveCascade(t, s).Entries[0].Provider
	var once sync.Once
	appending := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		once.Do(func() {
			late := []chat.Message{chat.TextMessage("user", "a question asked while the compaction ran, long enough to count"),
				chat.TextMessage("assistant", "its answer, also appended while the compaction ran")}
			if _, err := s.Append(ctx, "t", late, memory.AppendOptions{}); err != nil {
				t.Error(err)
			}
		})
		return offline.Complete(ctx, req)
	}}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("appending", appending, 0)), compact.Settings{TokenLimit: 6000})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != memory.StatusApplied || rep.TokensAfter >= rep.TokensBefore {
		t.Fatalf("report %s: tokens %d -> %d: want applied, and fewer tokens after", rep.Status, rep.TokensBefore, rep.TokensAfter)
	}
	if got, want := rep.MessagesAppended, 2; got != want {
		t.Errorf("messages_appended = %d, want %d", got, want)
	}
	if rep.TokensAppended <= 0 || rep.TokensAfter+rep.TokensAppended != th.ActiveTokens {
		t.Errorf("tokens_after %d + tokens_appended %d, want the active context's %d", rep.TokensAfter, rep.TokensAppended, th.ActiveTokens)
	}
	if rep.MessagesAfter+rep.MessagesAppended != th.ActiveMessages {
		t.Errorf("messages_after %d + messages_appended %d, want the active context's %d", rep.MessagesAfter, rep.MessagesAppended, th.ActiveMessages)
	}
	listed, err := s.Reports(ctx, "t", 1)
	if err != nil || len(listed) != 1 || listed[0].TokensAfter != rep.TokensAfter || listed[0].TokensAppended != rep.TokensAppended {
		t.Errorf("listed report %+v, %v: want the same split", listed, err)
	}
}

// TestFailedCompactionSummarizedNothing: a compaction that applied nothing claims no message
// summarized, in the report it returns and in the stored one; every message is kept.
func TestFailedCompactionSummarizedNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 30, 400)
	c := compact.New(s, storetest.FailingCascade(s), compact.Settings{TokenLimit: 6000})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err == nil || rep.Status != memory.StatusFailed {
		t.Fatalf("compact: %s, %v: want failed", rep.Status, err)
	}
	stored, err := s.Report(ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []memory.Report{rep, stored} {
		if r.SummarizedMessages != 0 || r.KeptMessages != r.MessagesBefore-1 || r.TokensAfter != r.TokensBefore {
			t.Errorf("failed report: %d summarized, %d kept of %d, tokens %d -> %d: want none summarized, every message but the system prompt kept",
				r.SummarizedMessages, r.KeptMessages, r.MessagesBefore, r.TokensBefore, r.TokensAfter)
		}
	}
}
