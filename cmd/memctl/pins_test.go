package main

import (
	"strings"
	"testing"
)

// TestPinCommands: memctl pin keeps a message through a compaction and show marks it, in the
// active context and in the history; unpin removes it; bad SEQs are usage errors and a
// message that does not exist is exit 1.
func TestPinCommands(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t", testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"))
	if out := m.must("pin", "t", "16"); !strings.Contains(out, "pinned message 16 of t (its unit: messages 15-16)") {
		t.Fatalf("pin: %q", out)
	}
	m.must("compact", "t", "--limit", "4000", "--force")
	active := m.must("show", "t")
	if !strings.Contains(active, "#16 tool ") || !strings.Contains(active, "[pinned]") {
		t.Fatalf("show after a compaction does not hold message 16 marked pinned:\n%s", active)
	}
	if i, j := strings.Index(active, "#16 tool"), strings.Index(active, "(summary)"); i > j {
		t.Fatalf("the pinned message a summary covers is not before the summary:\n%s", active)
	}
	all := m.must("show", "t", "--all")
	if strings.Count(all, "[pinned") != 2 {
		t.Fatalf("show --all marks %d messages pinned, want 2 (15 and 16):\n%s", strings.Count(all, "[pinned"), all)
	}
	if out := m.must("--json", "show", "t"); strings.Count(out, `"pinned": true`) != 2 {
		t.Fatalf("show --json: %d pinned, want 2", strings.Count(out, `"pinned": true`))
	}
	m.must("unpin", "t", "15")
	if code, _, errs := m.run("unpin", "t", "15"); code != 1 || !strings.Contains(errs, "not pinned") {
		t.Fatalf("unpin twice: exit %d, %s", code, errs)
	}
	for _, seq := range []string{"0", "x", "1.5"} {
		if code, _, errs := m.run("pin", "t", seq); code != 2 || !strings.Contains(errs, "SEQ") {
			t.Fatalf("pin t %s: exit %d, %s", seq, code, errs)
		}
	}
	if code, _, errs := m.run("pin", "t", "99"); code != 1 || !strings.Contains(errs, "not 99") {
		t.Fatalf("pin t 99: exit %d, %s", code, errs)
	}
}
