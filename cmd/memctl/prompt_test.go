package main

import (
	"strings"
	"testing"
)

// TestShowMarksChangedPrompt: show --all marks a system message stored after the conversation
// began (memctl serve stores a changed system prompt so); the leading one is not marked.
func TestShowMarksChangedPrompt(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", m.writeFile("c.jsonl",
		`{"role":"system","content":"Today is Monday."}`, `{"role":"user","content":"plan"}`, `{"role":"assistant","content":"ok"}`,
		`{"role":"system","content":"Today is Tuesday."}`, `{"role":"user","content":"and now?"}`))
	out := m.must("show", "t1", "--all")
	if n := strings.Count(out, "system prompt changed"); n != 1 {
		t.Fatalf("%d marks, want 1:\n%s", n, out)
	}
	i, j := strings.Index(out, "system prompt changed"), strings.Index(out, "Today is Tuesday.")
	if i < 0 || j < i || strings.Contains(out[i:j], "Today is Monday.") {
		t.Fatalf("the mark is not on the changed prompt:\n%s", out)
	}
}
