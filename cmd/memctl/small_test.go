package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
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

// TestSearchSnippetLineBreaks: a line break in a snippet shows as "; " in the table, whether it
// is one in a message's text, an escape in a JSON tool result, or an escape in a tool call's
// arguments (JSON text within the JSON of the tool calls, so escaped twice); --json keeps
// each snippet as stored.
func TestSearchSnippetLineBreaks(t *testing.T) {
	m := newMemctl(t)
	path := filepath.Join(m.dir, "c.json")
	conv := `[{"role":"user","content":"first zebra line\nsecond zebra line"},
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"note","arguments":"{\"t\":\"C:\\\\d \\\"q\\\"\\tone zebra\\ntwo\"}"}}]},
{"role":"tool","tool_call_id":"c1","content":"{\"ok\":\"zebra\\nsaved\"}"}]`
	if err := os.WriteFile(path, []byte(conv), 0o600); err != nil {
		t.Fatal(err)
	}
	m.must("import", "t", path)
	out := m.must("search", "zebra")
	for _, want := range []string{
		"first zebra line; second zebra line",
		`{"ok":"zebra; saved"}`,
		`"arguments":"{"t":"C:\d "q" one zebra; two"}"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("search zebra: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, `\n`) || strings.Contains(out, `\t`) || strings.Contains(out, `\"`) {
		t.Errorf("snippets show JSON escapes:\n%s", out)
	}
	var hits []struct {
		Seq     int    `json:"seq"`
		Snippet string `json:"snippet"`
	}
	if err := json.Unmarshal([]byte(m.must("search", "zebra", "--json")), &hits); err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Seq == 2 && !strings.Contains(h.Snippet, `one [zebra]\\ntwo`) {
			t.Errorf("--json changed the tool call's snippet: %q", h.Snippet)
		}
	}
}

// TestThreadsLimitUsed: the LIMIT column of threads is the limit the thread is fitted in, not
// the config's: under token_limit auto (the default), the window memctl serve recorded for a
// thread (over its calibration ratio), marked auto; the thread's own limit wins over it; with
// a number in the config, serve fits every thread in that number, and threads shows it.
func TestThreadsLimitUsed(t *testing.T) {
	m := newMemctl(t)
	file := conversationFiles(t)[0]
	for _, id := range []string{"served", "own", "plain"} {
		m.must("import", id, file)
	}
	ctx := context.Background()
	s, err := memory.Open(ctx, m.db)
	if err != nil {
		t.Fatal(err)
	}
	window := &compact.Window{Model: "m", Tokens: 30000, Source: "max_model_len 30000 of GET /v1/models", Ratio: 1.5, Limit: 20000}
	for _, id := range []string{"served", "own"} {
		if err := compact.SaveThreadSettings(ctx, s, id, compact.ThreadSettings{Window: window}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	m.must("set", "own", "--limit", "7000")

	row := func(out, id string) string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == id {
				return line
			}
		}
		t.Fatalf("no row of %s in\n%s", id, out)
		return ""
	}
	out := m.must("threads")
	for _, tc := range []struct {
		id, want string
		auto     bool
	}{{"served", " 20000 auto ", true}, {"own", " 7000 ", false}, {"plain", " 128000 ", false}} {
		if r := row(out, tc.id); !strings.Contains(r, tc.want) || strings.Contains(r, "auto") != tc.auto {
			t.Errorf("threads, %s: %q, want LIMIT %q", tc.id, r, strings.TrimSpace(tc.want))
		}
	}
	for id, want := range map[string][2]any{"served": {20000.0, "upstream"}, "own": {7000.0, "thread"}, "plain": {128000.0, "config"}} {
		if e := threadsJSON(t, m)[id]; e["token_limit"] != want[0] || e["token_limit_from"] != want[1] {
			t.Errorf("threads --json, %s: token_limit %v from %v, want %v from %v", id, e["token_limit"], e["token_limit_from"], want[0], want[1])
		}
	}

	m.config = m.writeFile("memctl.yaml", "compaction:\n  token_limit: 9000\n")
	if r := row(m.must("threads"), "served"); !strings.Contains(r, " 9000 ") || strings.Contains(r, "auto") {
		t.Errorf("threads with token_limit 9000, served: %q, want LIMIT 9000", r)
	}
}

// TestExitCodeEveryCode: every memory.Code has its exit code in the one table; an invalid
// input is 2, a missing thread 1.
func TestExitCodeEveryCode(t *testing.T) {
	for _, c := range memory.Codes {
		if _, ok := exitCodes[c]; !ok {
			t.Errorf("code %q has no exit code", c)
		}
	}
	if got := exitCode(fmt.Errorf("import: %w", &memory.InputError{Msg: "bad"})); got != exitUsage {
		t.Errorf("input error: exit %d, want %d", got, exitUsage)
	}
	if got := exitCode(fmt.Errorf("show: %w", memory.ErrThreadNotFound)); got != exitFail {
		t.Errorf("thread not found: exit %d, want %d", got, exitFail)
	}
}
