package main

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestCoverage: after a compaction its messages read as archived by it and it is current;
// after a revert it is reverted, no message is archived, and the history is the same.
func TestCoverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", "../../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	rep, err := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 8000, Strategy: compact.StrategySummarize}).
		Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	cv, err := readCoverage(ctx, s, "t")
	if err != nil {
		t.Fatal(err)
	}
	if cv.Current == nil || cv.Current.ID != rep.ID || coverState(*cv.Current) != "current" || len(cv.startingAt(rep.FromSeq)) != 1 {
		t.Fatalf("coverage after compaction: current %+v, covering %d", cv.Current, len(cv.Covering))
	}
	if l := cv.label(rep.FromSeq); !strings.HasPrefix(l, "archived: covered by compaction") {
		t.Fatalf("label of #%d: %q", rep.FromSeq, l)
	}
	if l := cv.label(rep.ToSeq + 1); l != "" {
		t.Fatalf("label of a kept message: %q", l)
	}
	if _, err := s.Revert(ctx, "", rep.ID); err != nil {
		t.Fatal(err)
	}
	after, err := readCoverage(ctx, s, "t")
	if err != nil {
		t.Fatal(err)
	}
	if after.Current != nil || coverState(after.Covering[0]) != "reverted" || after.label(rep.FromSeq) != "" || len(after.Messages) != len(cv.Messages) {
		t.Fatalf("coverage after revert: current %+v, state %q", after.Current, coverState(after.Covering[0]))
	}
}
