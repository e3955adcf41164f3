package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// asTerminal makes memctl take every stream for a terminal for the rest of the test, with
// NO_COLOR unset.
func asTerminal(t *testing.T) {
	t.Helper()
	terminal = func(any) bool { return true }
	t.Cleanup(func() { terminal = isTerminal })
	unsetNoColor(t)
}

func unsetNoColor(t *testing.T) {
	t.Helper()
	if v, ok := os.LookupEnv("NO_COLOR"); ok {
		os.Unsetenv("NO_COLOR")
		t.Cleanup(func() { os.Setenv("NO_COLOR", v) })
	}
}

// writeFile writes lines joined by newlines to a file of the test directory.
func (m *memctl) writeFile(name string, lines ...string) string {
	path := filepath.Join(m.dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		m.t.Fatal(err)
	}
	return path
}

// TestTokensEveryImportForm: tokens counts the same messages alike as JSONL, a JSON array,
// {"messages": [...]} and a request with tools, and names the line of a bad JSONL line.
func TestTokensEveryImportForm(t *testing.T) {
	m := newMemctl(t)
	data, err := os.ReadFile(testdata("tokens/cookbook_messages.json"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, msg := range msgs {
		b, _ := json.Marshal(msg)
		lines = append(lines, string(b))
	}
	array := "[" + strings.Join(lines, ",") + "]"
	forms := map[string]string{
		"jsonl":    m.writeFile("m.jsonl", lines...),
		"array":    m.writeFile("m.json", array),
		"messages": m.writeFile("o.json", `{"messages": `+array+`}`),
		"request":  m.writeFile("r.json", `{"model": "gpt-4o", "messages": `+array+`, "tools": []}`),
	}
	for form, file := range forms {
		if got := strings.TrimSpace(m.must("tokens", "--model", "gpt-4", file)); got != "129" {
			t.Errorf("%s: %s tokens, want 129", form, got)
		}
	}
	// The import forms are accepted by import too, the JSONL one through standard input.
	if code, _, errs := m.runIn(strings.Join(lines, "\n"), "tokens", "-"); code != 0 {
		t.Errorf("tokens - (JSONL on stdin): exit %d %s", code, errs)
	}
	bad := m.writeFile("bad.jsonl", lines[0], lines[1], `{"role": "user", "content": 5`)
	if code, _, errs := m.run("tokens", bad); code != 2 || !strings.Contains(errs, "line 3") {
		t.Errorf("bad JSONL line 3: exit %d %q, want 2 naming line 3", code, errs)
	}
	// A response object, and a request whose message has no role, are refused in the
	// importer's words, not counted as role-less messages or said to hold none.
	for file, want := range map[string]string{
		m.writeFile("resp.json", `{"choices": [{"message": {"role": "assistant", "content": "hi"}}]}`): "role: missing: this is a chat completion response",
		m.writeFile("norole.json", `{"model": "m", "messages": [{"content": "hi"}], "tools": []}`):     "message 0: role: missing",
	} {
		if code, _, errs := m.run("tokens", file); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("tokens %s: exit %d %q, want 2 saying %q", file, code, errs, want)
		}
	}
}

// TestSearchPrefix: a word ending in * matches the words starting with it; without the * the
// whole word must match; the * of a word is never FTS5 syntax elsewhere.
func TestSearchPrefix(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", m.writeFile("c.jsonl",
		`{"role":"user","content":"my booking code is OBUT9V, please check"}`,
		`{"role":"assistant","content":"booking OBUT9V: confirmed"}`,
		`{"role":"user","content":"thanks, also look at ZZTOP1"}`))
	var hits []map[string]any
	if err := json.Unmarshal([]byte(m.must("search", "OBUT*", "--json")), &hits); err != nil || len(hits) != 2 {
		t.Fatalf("OBUT*: %d hits (%v), want 2", len(hits), err)
	}
	if s := hits[0]["snippet"].(string); !strings.Contains(s, "[OBUT9V]") {
		t.Errorf("JSON snippet %q does not mark the match", s)
	}
	if out := m.must("search", "OBUT", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("OBUT without *: %s, want no hit", out)
	}
	for _, q := range []string{"obut*", "OBUT* booking", "booking OB*"} {
		if out := m.must("search", q, "--json"); strings.Count(out, `"seq"`) != 2 {
			t.Errorf("%q: want 2 hits, got %s", q, out)
		}
	}
	for _, q := range []string{"*", "**", `"OB*`, "OB*)", "NEAR(OB*", "ZZ* OR", "t*:x"} {
		if code, _, errs := m.run("search", q, "--json"); code != 0 {
			t.Errorf("search %q: exit %d %s", q, code, errs)
		}
	}
	if out := m.must("search", "ZZ* OR", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf(`"ZZ* OR": OR must be a word to match, not syntax: %s`, out)
	}
}

// TestSearchMarksOnlyOnATerminal: [match] brackets on a terminal, plain text in a pipe, and a
// bracket of the stored text is kept either way.
func TestSearchMarksOnlyOnATerminal(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", m.writeFile("c.jsonl", `{"role":"user","content":"[note] the code OBUT9V [x]"}`))
	plain := m.must("search", "OBUT9V")
	if !strings.Contains(plain, "[note] the code OBUT9V [x]") {
		t.Errorf("piped search: %q, want the plain text", plain)
	}
	asTerminal(t)
	marked := m.must("search", "OBUT9V")
	if !strings.Contains(marked, "[note] the code [OBUT9V] [x]") {
		t.Errorf("search on a terminal: %q, want [OBUT9V] marked", marked)
	}
}

// TestLongHelpExplainsColumns: the long help of each command that prints a table names every
// column of it.
func TestLongHelpExplainsColumns(t *testing.T) {
	m := newMemctl(t)
	for cmd, cols := range map[string][]string{
		"threads":   {"THREAD", "MODEL", "MESSAGES", "ACTIVE", "TOKENS", "LIMIT", "STRATEGY", "COMPACTIONS", "UPDATED"},
		"reports":   {"ID", "THREAD", "STATUS", "REASON", "TOKENS", "MESSAGES", "PROVIDER", "REQUESTS", "PROMPT+COMPLETION", "CREATED", "ERROR"},
		"report":    {"PROVIDER", "MODEL", "OUTCOME", "HTTP", "CLASS", "MS", "ERROR"},
		"providers": {"NAME", "TYPE", "MODEL", "WINDOW", "COOLING UNTIL", "FAILURES", "LAST ERROR"},
		"attempts":  {"ID", "COMPACTION", "PROVIDER", "MODEL", "OUTCOME", "HTTP", "CLASS", "MS", "STARTED", "ERROR"},
		"search":    {"THREAD", "SEQ", "ROLE", "STATE", "SNIPPET"},
	} {
		help := m.must("help", cmd)
		long, _, _ := strings.Cut(strings.ReplaceAll(help, "\n", " "), "Usage:")
		for _, c := range cols {
			if !strings.Contains(long, c+" ") {
				t.Errorf("help %s does not explain column %s", cmd, c)
			}
		}
	}
}

// TestColourOnlyOnATerminal: headings, status words and the error prefix are coloured on a
// terminal; never with NO_COLOR (even empty), with --json, or in a pipe.
func TestColourOnlyOnATerminal(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", testdata("conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl"))
	unsetNoColor(t)
	if out := m.must("threads"); strings.Contains(out, "\x1b") {
		t.Errorf("colour in a pipe: %q", out)
	}
	asTerminal(t)
	out := m.must("threads")
	if !strings.HasPrefix(out, "\x1b[1mTHREAD") {
		t.Errorf("threads on a terminal: heading not bold: %q", out)
	}
	if got := strings.ReplaceAll(strings.ReplaceAll(out, "\x1b[1m", ""), "\x1b[0m", ""); strings.Contains(got, "\x1b") {
		t.Errorf("threads: an escape other than the heading's: %q", got)
	}
	if out := m.must("compact", "t1", "--limit", "5000"); !strings.Contains(out, ": \x1b[32mapplied\x1b[0m (") {
		t.Errorf("compact on a terminal: status not green: %q", out)
	}
	if _, _, errs := m.run("show", "nope"); !strings.HasPrefix(errs, "\x1b[31mmemctl:\x1b[0m ") {
		t.Errorf("error on a terminal: %q, want a red memctl:", errs)
	}
	for _, args := range [][]string{{"threads", "--json"}, {"report", "1", "--json"}} {
		if out := m.must(args...); strings.Contains(out, "\x1b") {
			t.Errorf("%q: colour in JSON: %q", args, out)
		}
	}
	t.Setenv("NO_COLOR", "")
	for _, args := range [][]string{{"threads"}, {"report", "1"}, {"show", "nope"}} {
		_, out, errs := m.run(args...)
		if strings.Contains(out+errs, "\x1b") {
			t.Errorf("%q with NO_COLOR: colour: %q %q", args, out, errs)
		}
	}
}

// TestShowFull: show trims a long message; show --full prints it whole.
func TestShowFull(t *testing.T) {
	m := newMemctl(t)
	long := strings.Repeat("word ", 400) + "THE-END"
	args := strings.Repeat("x", 900) + "ARGS-END"
	m.must("import", "t1", m.writeFile("c.jsonl",
		fmt.Sprintf(`{"role":"user","content":%q}`, long),
		fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":%q}}]}`, args)))
	if out := m.must("show", "t1"); strings.Contains(out, strings.Repeat("word ", 200)) || !strings.Contains(out, "THE-END") {
		t.Errorf("show without --full: want the message trimmed (its end kept): %d bytes", len(out))
	}
	for _, extra := range [][]string{nil, {"--all"}} {
		out := m.must(append([]string{"show", "t1", "--full"}, extra...)...)
		if !strings.Contains(out, "  "+strings.TrimSpace(long)+"\n") || !strings.Contains(out, args+" (id c1)") {
			t.Errorf("show --full %v: the message or the arguments not whole", extra)
		}
	}
}

// TestImportRefusesRepeat: importing the file whose messages already end the thread is exit 2
// naming --again, writes nothing, from a file or standard input; --again appends; the same
// messages not at the end are imported.
func TestImportRefusesRepeat(t *testing.T) {
	m := newMemctl(t)
	a := m.writeFile("a.jsonl", `{"role":"user","content":"hello"}`, `{"role":"assistant","content":"hi"}`)
	b := m.writeFile("b.jsonl", `{"role":"user","content":"more"}`)
	m.must("import", "t1", a)
	count := func() int {
		var ts []struct {
			Messages int `json:"messages"`
		}
		json.Unmarshal([]byte(m.must("threads", "--json")), &ts)
		return ts[0].Messages
	}
	code, _, errs := m.run("import", "t1", a)
	if code != 2 || !strings.Contains(errs, "--again") || !strings.Contains(errs, "already the last messages") {
		t.Fatalf("re-import: exit %d %q, want 2 naming --again", code, errs)
	}
	data, _ := os.ReadFile(a)
	if code, _, errs := m.runIn(string(data), "import", "t1", "-"); code != 2 || !strings.Contains(errs, "--again") {
		t.Errorf("re-import from stdin: exit %d %q", code, errs)
	}
	// The last message alone is at the end too.
	if code, _, _ := m.run("import", "t1", m.writeFile("last.json", `[{"role":"assistant","content":"hi"}]`)); code != 2 {
		t.Errorf("the thread's last message again: exit %d, want 2", code)
	}
	if n := count(); n != 2 {
		t.Fatalf("after refused imports: %d messages, want 2", n)
	}
	m.must("import", "t1", b)
	m.must("import", "t1", a) // a's messages are no longer at the end
	if n := count(); n != 5 {
		t.Fatalf("%d messages, want 5", n)
	}
	m.must("import", "t1", a, "--again")
	if n := count(); n != 7 {
		t.Fatalf("after --again: %d messages, want 7", n)
	}
	// Bad input is reported as bad input, whether the check reads it or the import does.
	bad := m.writeFile("bad.jsonl", `{"role":"user"`)
	if code, _, errs := m.run("import", "t1", bad); code != 2 || !strings.Contains(errs, "line 1") {
		t.Errorf("bad file: exit %d %q", code, errs)
	}
}

// TestLocalTime: --local-time shows human times in the local zone and names it; JSON stays
// UTC.
func TestLocalTime(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", m.writeFile("c.jsonl", `{"role":"user","content":"hello"}`))
	saved := time.Local
	time.Local = time.FixedZone("XYZ", 5*3600+30*60)
	t.Cleanup(func() { time.Local = saved })
	var ts []struct {
		UpdatedAt time.Time `json:"updated_at"`
	}
	raw := m.must("threads", "--json", "--local-time")
	if err := json.Unmarshal([]byte(raw), &ts); err != nil || len(ts) != 1 {
		t.Fatalf("threads --json: %v %s", err, raw)
	}
	if !strings.Contains(raw, "Z\"") {
		t.Errorf("JSON with --local-time not UTC: %s", raw)
	}
	utc, local := m.must("threads"), m.must("threads", "--local-time")
	if !strings.Contains(utc, "UPDATED (UTC)") || !strings.Contains(utc, ts[0].UpdatedAt.UTC().Format("2006-01-02 15:04:05")) {
		t.Errorf("threads: %q", utc)
	}
	if !strings.Contains(local, "UPDATED (XYZ)") || !strings.Contains(local, ts[0].UpdatedAt.In(time.Local).Format("2006-01-02 15:04:05")) {
		t.Errorf("threads --local-time: %q", local)
	}
}

// TestCompleteThreadNames: THREAD arguments and --thread complete to the database's thread
// names; FILE of import completes files; no database is created by completing.
func TestCompleteThreadNames(t *testing.T) {
	m := newMemctl(t)
	if out := m.must("__complete", "show", ""); strings.Contains(out, "t1") {
		t.Errorf("no database: %q", out)
	}
	if _, err := os.Stat(m.db); !os.IsNotExist(err) {
		t.Fatalf("completion created the database: %v", err)
	}
	file := m.writeFile("c.jsonl", `{"role":"user","content":"hello"}`)
	m.must("import", "support-1", file)
	m.must("import", "support-2", file)
	m.must("import", "other", file)
	for _, args := range [][]string{{"show", "sup"}, {"export", "sup"}, {"compact", "sup"}, {"delete", "sup"},
		{"set", "sup"}, {"reports", "sup"}, {"import", "sup"}, {"search", "x", "--thread", "sup"}} {
		out := m.must(append([]string{"__complete"}, args...)...)
		if !strings.Contains(out, "support-1\nsupport-2\n") || strings.Contains(out, "other") || !strings.Contains(out, ":4\n") {
			t.Errorf("complete %q: %q, want the support threads and no file completion", args, out)
		}
	}
	if out := m.must("__complete", "import", "support-1", ""); strings.Contains(out, "support-1") || !strings.Contains(out, ":0\n") {
		t.Errorf("complete import FILE: %q, want files", out)
	}
}

// TestImportProgress: a file over 4 MB shows its progress on a terminal's stderr, ending with
// the whole size; a small file or a pipe shows none.
func TestImportProgress(t *testing.T) {
	m := newMemctl(t)
	var lines []string
	chunk := strings.Repeat("lorem ipsum dolor ", 6000) // about 100 KiB
	for range 50 {
		lines = append(lines, fmt.Sprintf(`{"role":"user","content":%q}`, chunk))
	}
	big := m.writeFile("big.jsonl", lines...)
	st, _ := os.Stat(big)
	if st.Size() <= progressBytes {
		t.Fatalf("test file of %d bytes is not over the threshold", st.Size())
	}
	small := m.writeFile("small.jsonl", lines[0])
	if _, _, errs := m.run("import", "t1", big); strings.Contains(errs, "read") {
		t.Errorf("progress on a pipe: %q", errs)
	}
	asTerminal(t)
	_, _, errs := m.run("import", "t2", big)
	want := fmt.Sprintf("read %s of %s\n", byteSize(st.Size()), byteSize(st.Size()))
	if !strings.Contains(errs, "\rmemctl: import: read ") || !strings.HasSuffix(errs, want) || strings.Count(errs, "\r") < 3 {
		t.Errorf("progress on a terminal: %q, want it to end with %q", errs, want)
	}
	if _, _, errs := m.run("import", "t3", small); errs != "" {
		t.Errorf("small file: %q", errs)
	}
}
