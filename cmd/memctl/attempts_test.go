package main

import (
	"encoding/json"
	"testing"
)

// TestAttemptsOfOneCompaction: --compaction lists that compaction's attempts only, oldest
// first; an id below 1 is a usage error.
func TestAttemptsOfOneCompaction(t *testing.T) {
	m := newMemctl(t)
	files := conversationFiles(t)
	m.must("import", "t1", files[0])
	m.must("import", "t2", files[1])
	m.must("compact", "t1", "--limit", "2000", "--force")
	m.must("compact", "t2", "--limit", "2000", "--force")
	var all, one []map[string]any
	if err := json.Unmarshal([]byte(m.must("attempts", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(m.must("attempts", "--compaction", "2", "--json")), &one); err != nil {
		t.Fatal(err)
	}
	if len(one) == 0 || len(one) >= len(all) {
		t.Fatalf("compaction 2 has %d attempts of %d in all; want some, not all", len(one), len(all))
	}
	for i, a := range one {
		if a["compaction_id"] != 2.0 {
			t.Errorf("attempt %v is not compaction 2's", a)
		}
		if i > 0 && a["id"].(float64) <= one[i-1]["id"].(float64) {
			t.Errorf("attempts not oldest first: %v", one)
		}
	}
	if code, _, errs := m.run("attempts", "--compaction", "0"); code != 2 {
		t.Errorf("--compaction 0: exit %d (%s), want 2", code, errs)
	}
}
