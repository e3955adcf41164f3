package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// A thread's version changes with everything its active context is made from, whichever Store
// changes it; AppendLive appends to the version it is given only, and what it reports
// (entries, encodings, the version after) is what reading the thread again gives.
func TestVersionFollowsEveryChange(t *testing.T) {
	ctx := context.Background()
	s, name := openStore(t)
	other, err := memory.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	v0, err := s.Version(ctx, "v")
	if err != nil || v0.Found {
		t.Fatalf("version of a missing thread: %+v, %v", v0, err)
	}
	longThread(t, s, "v", 20, 200)
	v1, _ := s.Version(ctx, "v")
	if !v1.Found || v1.LastSeq != 41 || v1.SameContext(v0) {
		t.Fatalf("after an append: %+v", v1)
	}
	changes := []struct {
		what string
		do   func() error
	}{
		{"a compaction", func() error {
			limit := 2000
			rep, err := memory.NewCompactor(other, extractiveCascade(t, other), memory.Settings{}).Compact(ctx, "v",
				memory.CompactOptions{Force: true, Override: memory.ThreadSettings{TokenLimit: &limit}})
			if err == nil && rep.Status != memory.StatusApplied {
				err = errors.New(rep.Status + ": " + rep.Detail)
			}
			return err
		}},
		{"a pin", func() error { _, err := other.Pin(ctx, "v", 3); return err }},
		{"an unpin", func() error { return other.Unpin(ctx, "v", 3) }},
		{"an append", func() error {
			_, err := other.Append(ctx, "v", []memory.Message{memory.TextMessage("user", "more")}, memory.AppendOptions{})
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
		if _, err := s.AppendLive(ctx, "v", []memory.Message{memory.TextMessage("user", "stale")}, memory.AppendOptions{}, &prev); !errors.Is(err, memory.ErrStale) {
			t.Fatalf("append at the version before %s: %v, want ErrStale", c.what, err)
		}
		if again, _ := s.Version(ctx, "v"); again != v {
			t.Fatalf("a refused append changed the version: %+v, then %+v", v, again)
		}
		prev = v
	}
	// Settings change the version, not the context.
	limit := 5000
	if err := other.SetThreadSettings(ctx, "v", memory.ThreadSettings{TokenLimit: &limit}); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Version(ctx, "v")
	if v == prev || !v.SameContext(prev) {
		t.Fatalf("new settings: %+v after %+v: want other settings, the same context", v, prev)
	}
	if ts, err := v.ParsedSettings("v"); err != nil || ts.TokenLimit == nil || *ts.TokenLimit != 5000 {
		t.Fatalf("the version's settings: %+v, %v", ts, err)
	}

	// AppendLive at the thread's version: what it reports is what a new read gives.
	l, err := s.ReadLive(ctx, "v")
	if err != nil || l.Version != v || len(l.History) != int(v.LastSeq) {
		t.Fatalf("ReadLive: version %+v (want %+v), %d messages, %v", l.Version, v, len(l.History), err)
	}
	add := []memory.Message{memory.TextMessage("user", "a <new> question & more"), memory.TextMessage("assistant", "an answer")}
	ap, err := s.AppendLive(ctx, "v", add, memory.AppendOptions{}, &l.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !ap.Before.SameContext(v) || ap.After.LastSeq != v.LastSeq+2 {
		t.Fatalf("AppendLive: before %+v, after %+v", ap.Before, ap.After)
	}
	after, _ := s.ReadLive(ctx, "v")
	if after.Version != ap.After {
		t.Fatalf("the version after the append: reported %+v, read %+v", ap.After, after.Version)
	}
	got := l.Active.Extend(ap.Entries)
	if got.Tokens != after.Active.Tokens || len(got.Entries) != len(after.Active.Entries) {
		t.Fatalf("extended context: %d tokens, %d entries; read: %d tokens, %d entries", got.Tokens, len(got.Entries), after.Active.Tokens, len(after.Active.Entries))
	}
	for i, e := range ap.Entries {
		want, _ := json.Marshal(add[i])
		if string(ap.Raw[i]) != string(want) || e.Seq != v.LastSeq+1+int64(i) {
			t.Fatalf("entry %d: seq %d, raw %s; want seq %d, raw %s", i, e.Seq, ap.Raw[i], v.LastSeq+1+int64(i), want)
		}
	}
	gb, _ := json.Marshal(got.Messages())
	wb, _ := json.Marshal(after.Active.Messages())
	if string(gb) != string(wb) {
		t.Fatalf("extended context:\n%s\nread:\n%s", gb, wb)
	}
}
