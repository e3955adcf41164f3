package main

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestHugeLimitUnderTriggerNotCompacted: a thread of a few thousand tokens under a limit of
// MaxInt64 with trigger 1 is far under its trigger; the trigger computed in float64 must not
// wrap to a negative number and make automatic compaction run (or the limit must be refused
// with exit 2).
func TestHugeLimitUnderTriggerNotCompacted(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	code, out, errs := m.run("compact", "t1", "--limit", strconv.FormatInt(1<<63-1, 10), "--trigger", "1")
	if code == 2 {
		return
	}
	var reports []map[string]any
	json.Unmarshal([]byte(m.must("reports", "--json")), &reports)
	if len(reports) != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q: a thread under its trigger was compacted: %v", code, out, errs, reports)
	}
}
