package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRevertByThread: revert takes a thread id as well as a compaction id, and reverts the
// thread's latest applied compaction; --thread reads a number as a thread id.
func TestRevertByThread(t *testing.T) {
	m := newMemctl(t)
	file := conversationFiles(t)[0]
	m.must("import", "t", file)
	first, st1 := compactID(t, m, "t", "--limit", "3000", "--force")
	// 1,600: at 2,000 the first compaction's context (1,711 tokens, the newest user message
	// held) is within the limit with nothing new to summarize.
	second, st2 := compactID(t, m, "t", "--limit", "1600", "--force")
	if st1 != "applied" || st2 != "applied" {
		t.Fatalf("setup statuses %s %s", st1, st2)
	}
	for _, want := range []int{second, first} {
		var r struct {
			ID     int    `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(m.must("revert", "t", "--json")), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != want || r.Status != "reverted" {
			t.Fatalf("revert t reverted %d (%s), want %d", r.ID, r.Status, want)
		}
	}
	code, _, errs := m.run("revert", "t")
	if code != 1 || !strings.Contains(errs, `thread "t" has no applied compaction`) {
		t.Fatalf("revert of a thread with no applied compaction: exit %d, %q", code, errs)
	}
	code, _, errs = m.run("revert", "nosuch")
	if code != 1 || !strings.Contains(errs, "thread not found") {
		t.Fatalf("revert of an unknown thread: exit %d, %q", code, errs)
	}

	m.must("import", "42", file)
	id, _ := compactID(t, m, "42", "--limit", "3000", "--force")
	if code, _, errs := m.run("revert", "42"); code != 1 || !strings.Contains(errs, "compaction not found: 42") {
		t.Fatalf("revert 42 (a compaction id): exit %d, %q", code, errs)
	}
	if out := m.must("revert", "--thread", "42"); !strings.Contains(out, strconv.Itoa(id)) {
		t.Fatalf("revert --thread 42 did not revert compaction %d:\n%s", id, out)
	}
}

// TestFlagValueErrors: a flag value that does not parse is a usage error that says what the
// value should be, never the parser's own words.
func TestFlagValueErrors(t *testing.T) {
	m := newMemctl(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compact", "t", "--limit", "2k"}, `--limit "2k": not a whole number in digits (2k may mean 2000 or 2048`},
		{[]string{"compact", "t", "--ratio", "half"}, `--ratio "half": not a decimal number`},
		{[]string{"search", "a", "--limit", "ten"}, `--limit "ten": not a whole number in digits`},
	} {
		code, _, errs := m.run(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "strconv") {
			t.Errorf("memctl %s: exit %d, %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}

// TestSearchEmptyQuery: an empty or blank query is a usage error, not an empty table.
func TestSearchEmptyQuery(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t", conversationFiles(t)[0])
	for _, q := range []string{"", "   "} {
		code, out, errs := m.run("search", q)
		if code != 2 || out != "" || !strings.Contains(errs, "the query is empty") {
			t.Errorf("search %q: exit %d, out %q, err %q", q, code, out, errs)
		}
	}
}

// TestSearchSnippetShowsJSONText: a snippet of a tool call's arguments shows the text the
// JSON escapes stand for, not backslashes.
func TestSearchSnippetShowsJSONText(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t", testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"))
	out := m.must("search", "update_reservation_flights", "--limit", "50")
	if !strings.Contains(out, `"reservation_id":"`) {
		t.Fatalf("no tool call arguments in the snippets:\n%s", out)
	}
	if strings.Contains(out, `\"`) || strings.Contains(out, `\n`) {
		t.Fatalf("snippets show JSON escapes:\n%s", out)
	}
	// --json keeps the snippet as stored.
	if js := m.must("search", "update_reservation_flights", "--json"); !strings.Contains(js, `\\\"reservation_id`) {
		t.Fatalf("--json snippet changed:\n%s", js)
	}
}

// TestImportResponseObject: importing a chat completion response says what it is and where its
// message is, not only that the role is missing.
func TestImportResponseObject(t *testing.T) {
	m := newMemctl(t)
	path := filepath.Join(m.dir, "resp.json")
	resp := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	if err := os.WriteFile(path, []byte(resp), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := m.run("import", "t", path)
	if code != 2 || !strings.Contains(errs, "this is a chat completion response, not a message") || !strings.Contains(errs, ".choices[0].message") {
		t.Fatalf("import of a response object: exit %d, %q", code, errs)
	}
}
