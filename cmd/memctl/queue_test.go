package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/lifesim"
)

// TestCompactStrategyQueue: memctl compact --strategy queue, end to end: over four parts of a
// generated agent thread, each imported then compacted, the active context shows at most
// queue_size summaries, each a block of its own in order; the fourth compaction folds the two
// oldest first (a report of its own); no compaction changes history; check passes; revert
// undoes the newest.
func TestCompactStrategyQueue(t *testing.T) {
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	if err := os.WriteFile(m.config, []byte("compaction:\n  token_limit: 1500\n  queue_size: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs := lifesim.Generated(16)
	for part := range 4 {
		var b strings.Builder
		for _, msg := range msgs[part*len(msgs)/4 : (part+1)*len(msgs)/4] {
			line, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(append(line, '\n'))
		}
		file := filepath.Join(m.dir, fmt.Sprintf("part%d.jsonl", part))
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		m.must("import", "t", file)
		history := m.must("export", "t", "--all")
		var rep struct {
			Status   string `json:"status"`
			Strategy string `json:"strategy"`
			View     *struct {
				Summaries []struct{ ID, From, To int64 } `json:"summaries"`
			} `json:"view"`
		}
		if err := json.Unmarshal([]byte(m.must("compact", "t", "--force", "--strategy", "queue", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Status != "applied" || rep.Strategy != "queue" {
			t.Fatalf("part %d: compaction %s by %s, want applied by queue: %s", part+1, rep.Status, rep.Strategy, m.must("reports", "t"))
		}
		var show struct {
			Messages []struct {
				Seq          int64 `json:"seq"`
				CompactionID int64 `json:"compaction_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(m.must("show", "t", "--json")), &show); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for i, e := range show.Messages {
			if e.CompactionID != 0 {
				ids = append(ids, e.CompactionID)
				if i > len(ids)+1 { // the system prompt, the summaries before it, the held user message
					t.Errorf("part %d: summary %d at %d, not among the blocks after the system prompt", part+1, e.CompactionID, i)
				}
			}
		}
		if m.must("export", "t", "--all") != history {
			t.Errorf("part %d: export --all changed by the compaction", part+1)
		}
		if want := min(part+1, 3); len(ids) != want || (rep.View == nil) != (want == 1) || rep.View != nil && len(rep.View.Summaries) != want-1 {
			t.Errorf("part %d: summaries %v, the report's view %+v; want %d blocks", part+1, ids, rep.View, want)
		}
	}
	var reps []struct {
		ID       int64  `json:"id"`
		Strategy string `json:"strategy"`
	}
	if err := json.Unmarshal([]byte(m.must("reports", "t", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 5 { // four compactions, one of them after a fold
		t.Errorf("%d reports, want 5 (the fourth compaction folds first)", len(reps))
	}
	m.must("check")
	before := m.must("show", "t", "--json")
	m.must("revert", "t")
	if after := m.must("show", "t", "--json"); after == before || strings.Count(after, `"compaction_id"`) != 2 {
		t.Errorf("after revert: %d summaries shown, want the 2 of before the newest compaction", strings.Count(after, `"compaction_id"`))
	}
}
