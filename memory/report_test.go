package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestRevert: only the newest applied compaction can be reverted; reverting it gives back the
// active context before it plus every message appended since, and reverting them all gives
// back every message.
func TestRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 30, 300)
	original, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: original.Tokens / 2})
	first, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	afterFirst, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	storetest.LongThread2(t, s, "t", 10, 300)
	second, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revert(ctx, "", first.ID); !errors.Is(err, memory.ErrNotLatest) {
		t.Fatalf("reverting an older compaction: %v, want errNotLatest", err)
	}
	storetest.LongThread2(t, s, "t", 2, 100) // appended after the second compaction
	hist, err := s.History(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revert(ctx, "u", second.ID); !errors.Is(err, memory.ErrCompactionNotFound) {
		t.Fatalf("reverting a compaction of t as one of u: %v, want ErrCompactionNotFound", err)
	}
	r, err := s.Revert(ctx, "t", second.ID) // still the latest: the refusal above wrote nothing
	if err != nil || r.Status != memory.StatusReverted {
		t.Fatalf("revert: %+v, %v", r, err)
	}
	// The active context is the one after the first compaction plus every message since.
	got, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	want := afterFirst.Messages()
	for _, e := range hist {
		if e.Seq > afterFirst.Entries[len(afterFirst.Entries)-1].Seq {
			want = append(want, e.Message)
		}
	}
	gj, err := json.Marshal(got.Messages())
	if err != nil {
		t.Fatal(err)
	}
	wj, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gj, wj) {
		t.Fatal("after revert the active context is not the previous one plus the appended messages")
	}
	if _, err := s.Revert(ctx, "", second.ID); !errors.Is(err, memory.ErrNotLatest) {
		t.Fatalf("reverting twice: %v", err)
	}
	// Reverting the first one too gives back every original message.
	if _, err := s.Revert(ctx, "", first.ID); err != nil {
		t.Fatal(err)
	}
	got, err = s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != len(hist) {
		t.Fatalf("%d active messages after reverting both, want all %d", len(got.Entries), len(hist))
	}
}

// TestReportIDJSON: a report not yet stored (ID 0) prints "id": null, a stored one its id,
// first in either case, and both read back into the same report.
func TestReportIDJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id   int64
		want string
	}{{0, `{"id":null,"thread":"t",`}, {7, `{"id":7,"thread":"t",`}} {
		r := memory.Report{ID: c.id, Thread: "t", FactsDropped: []string{}}
		b, err := json.Marshal(r)
		if err != nil || !bytes.HasPrefix(b, []byte(c.want)) || bytes.Count(b, []byte(`"id"`)) != 1 {
			t.Fatalf("id %d: %s (%v); want it to start %s with one id", c.id, b, err, c.want)
		}
		var back memory.Report
		if err := json.Unmarshal(b, &back); err != nil || back.ID != c.id || back.Thread != "t" {
			t.Errorf("id %d read back as %+v (%v)", c.id, back, err)
		}
	}
}
