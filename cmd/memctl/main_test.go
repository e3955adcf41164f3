package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/tokenizer"
)

// memctl runs the command with a database and config of the test and returns its exit code,
// stdout and stderr.
type memctl struct {
	t      *testing.T
	dir    string
	db     string
	config string
}

func newMemctl(t *testing.T) *memctl {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("MEMCTL_DB", "")
	t.Setenv("MEMCTL_CONFIG", "")
	// No user config or database from elsewhere.
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg-config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg-data"))
	t.Chdir(dir)
	return &memctl{t: t, dir: dir, db: filepath.Join(dir, "m.db")}
}

func (m *memctl) run(args ...string) (int, string, string) {
	return m.runIn("", args...)
}

func (m *memctl) runIn(stdin string, args ...string) (int, string, string) {
	m.t.Helper()
	full := append([]string{"--db", m.db}, args...)
	if m.config != "" {
		full = append([]string{"--config", m.config}, full...)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), full, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// must runs a command that must succeed and returns its stdout.
func (m *memctl) must(args ...string) string {
	m.t.Helper()
	code, out, errs := m.run(args...)
	if code != 0 {
		m.t.Fatalf("memctl %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// testdataDir is absolute: tests change their working directory.
var testdataDir, _ = filepath.Abs(filepath.Join("..", "..", "testdata"))

func testdata(name string) string { return filepath.Join(testdataDir, name) }

func conversationFiles(t *testing.T) []string {
	files, _ := filepath.Glob(testdata("conversations/*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no conversations in testdata")
	}
	return files
}

func TestImportExportRoundTrip(t *testing.T) {
	for _, file := range conversationFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			m := newMemctl(t)
			out := m.must("import", "t1", file, "--json")
			var res struct {
				Thread       string `json:"thread"`
				Imported     int    `json:"imported"`
				Messages     int    `json:"messages"`
				ActiveTokens int    `json:"active_tokens"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(file)
			want := corpus.Normalized(t, data)
			if res.Thread != "t1" || res.Imported != len(want) || res.Messages != len(want) || res.ActiveTokens <= 0 {
				t.Fatalf("import said %+v", res)
			}
			var got []any
			if err := json.Unmarshal([]byte(m.must("export", "t1", "--all")), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("export --all differs from the imported file")
			}
		})
	}
}

func TestImportBadInputExits2(t *testing.T) {
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []struct{ name, in, where string }{
		{"malformed JSONL line", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\n", "line 2"},
		{"unknown role", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"wizard\",\"content\":\"a\"}", "line 2: message 1: role"},
		{"orphan tool result", `{"role":"tool","tool_call_id":"zz","content":"r"}`, "line 1: message 0: tool_call_id"},
		{"call left unanswered", call + "\n" + call, `line 2: message 1: tool call "c1" of the message before it has no result`},
		{"two calls, one result", `{"role":"assistant","content":null,"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"B","type":"function","function":{"name":"g","arguments":"{}"}}]}` +
			"\n" + `{"role":"tool","tool_call_id":"A","content":"a"}` + "\n" + `{"role":"user","content":"next"}`, `line 3: message 2: tool call "B" of the message 2 before it has no result`},
		{"invalid UTF-8", "{\"role\":\"user\",\"content\":\"\xc3\x28\"}", "line 1"},
		{"no messages in the value", `{"foo": [1, 2]}`, "line 1"},
		{"array element", `[{"role":"user","content":"a"},{"role":"nobody"}]`, "message 1: role"},
		{"empty file", "", "no message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemctl(t)
			if code, _, errs := m.runIn(`{"role":"user","content":"kept"}`, "import", "t1", "-"); code != 0 {
				t.Fatalf("setup import: %s", errs)
			}
			before := m.must("export", "t1", "--all")
			path := filepath.Join(m.dir, "bad.jsonl")
			os.WriteFile(path, []byte(tc.in), 0o600)
			code, _, errs := m.run("import", "t1", path)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (%s)", code, errs)
			}
			if !strings.HasPrefix(errs, "memctl: ") || !strings.Contains(errs, tc.where) || strings.Count(errs, "\n") != 1 {
				t.Fatalf("stderr %q does not name %q on one line", errs, tc.where)
			}
			if after := m.must("export", "t1", "--all"); after != before {
				t.Fatal("a rejected import changed the thread")
			}
			// A new thread is not created by a rejected import either.
			if code, _, _ := m.run("import", "t2", path); code != 2 {
				t.Fatal("second rejected import did not exit 2")
			}
			if code, _, _ := m.run("export", "t2"); code != 1 {
				t.Fatal("a rejected import created its thread")
			}
		})
	}
}

func TestTokensCookbook(t *testing.T) {
	m := newMemctl(t)
	file := testdata("tokens/cookbook_messages.json")
	for model, want := range map[string]string{"gpt-4": "129", "gpt-4o": "124"} {
		if got := strings.TrimSpace(m.must("tokens", "--model", model, file)); got != want {
			t.Errorf("%s: %s tokens, want %s", model, got, want)
		}
	}
	var res struct {
		PromptTokens int    `json:"prompt_tokens"`
		Encoding     string `json:"encoding"`
	}
	json.Unmarshal([]byte(m.must("tokens", "--model", "gpt-4o", "--json", testdata("tokens/cookbook_tools.json"))), &res)
	if res.PromptTokens != 101 || res.Encoding != "o200k_base" {
		t.Fatalf("tools request: %+v, want 101 o200k_base", res)
	}
	// Without --model: the config's model (gpt-4o in the built-in config, gpt-4 in this one).
	if got := strings.TrimSpace(m.must("tokens", file)); got != "124" {
		t.Errorf("tokens without --model (built-in config, gpt-4o): %s, want 124", got)
	}
	m.config = filepath.Join(m.dir, "gpt4.yaml")
	os.WriteFile(m.config, []byte("model: gpt-4\n"), 0o600)
	if got := strings.TrimSpace(m.must("tokens", file)); got != "129" {
		t.Errorf("tokens without --model (config model gpt-4): %s, want 129", got)
	}
}

func TestCompactWithDefaultConfig(t *testing.T) {
	m := newMemctl(t)
	file := conversationFiles(t)[0]
	m.must("import", "t1", file)
	before := m.must("export", "t1", "--all")
	code, out, errs := m.run("compact", "t1", "--limit", "6000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "thread", "status", "reason", "token_limit", "tokens_before", "tokens_after", "messages_before", "messages_after",
		"summarized_messages", "kept_messages", "passes", "chunks", "provider", "model", "summary_tokens", "duration_ms", "error", "created_at", "summary", "attempts"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	if rep["status"] != "applied" || rep["provider"] != "offline" || rep["tokens_after"].(float64) > 6000 {
		t.Fatalf("report %v", rep)
	}
	if after := m.must("export", "t1", "--all"); after != before {
		t.Fatal("compaction changed export --all")
	}
	id := int(rep["id"].(float64))
	if out := m.must("report", strconv.Itoa(id)); !strings.Contains(out, "applied") || !strings.Contains(out, "summary:") {
		t.Fatalf("report %d:\n%s", id, out)
	}
	var reports []map[string]any
	json.Unmarshal([]byte(m.must("reports", "--json")), &reports)
	if len(reports) != 1 || reports[0]["summary"] != nil || reports[0]["attempts"] != nil {
		t.Fatalf("reports: %v", reports)
	}
	// The thread is under the trigger now: a second compaction is not needed.
	json.Unmarshal([]byte(m.must("compact", "t1", "--limit", "6000", "--json")), &rep)
	if rep["status"] != "not_needed" || rep["id"] != nil {
		t.Fatalf("second compaction: %v", rep)
	}
}

func TestCompactAllProvidersFailExits1(t *testing.T) {
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	os.WriteFile(m.config, []byte(`offline: false
cascade:
  - name: nowhere
    model: m
    base_url: http://127.0.0.1:1/v1
    timeout: 2s
    max_attempts: 1
`), 0o600)
	m.must("import", "t1", conversationFiles(t)[0])
	before := m.must("export", "t1")
	code, out, errs := m.run("compact", "t1", "--limit", "6000", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (%s)", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("no report on stdout with --json: %q", out)
	}
	if rep["status"] != "failed" || !strings.Contains(errs, "nowhere") {
		t.Fatalf("report %v, stderr %q", rep, errs)
	}
	if after := m.must("export", "t1"); after != before {
		t.Fatal("a failed compaction changed the active context")
	}
	var provs []map[string]any
	json.Unmarshal([]byte(m.must("providers", "--json")), &provs)
	if len(provs) != 1 || provs[0]["cooling_until"] == nil || provs[0]["consecutive_failures"].(float64) != 1 {
		t.Fatalf("providers: %v", provs)
	}
	var attempts []map[string]any
	json.Unmarshal([]byte(m.must("attempts", "--json")), &attempts)
	if len(attempts) != 1 || attempts[0]["error_class"] != "network" {
		t.Fatalf("attempts: %v", attempts)
	}
}

func TestErrorsAndExitCodes(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0]) // a database, so that "not found" is about the thread
	for _, tc := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"export", "nope"}, 1, `thread not found: "nope"`},
		{[]string{"report", "42"}, 1, "compaction not found: 42"},
		{[]string{"report", "x"}, 2, "not a compaction id"},
		{[]string{"compact", "nope"}, 1, "thread not found"},
		{[]string{"threads", "extra"}, 2, "unknown command"},
		{[]string{"export", "a", "b"}, 2, "accepts 1 arg"},
		{[]string{"import", "t"}, 2, "accepts 2 arg"},
		{[]string{"--bogus"}, 2, "unknown flag"},
		{[]string{"import", "t", "/no/such/file"}, 2, "no such file"},
		{[]string{"delete", "nope"}, 1, "thread not found"},
	} {
		code, _, errs := m.run(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.say) {
			t.Errorf("memctl %v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.say)
		}
	}
	m.config = filepath.Join(m.dir, "bad.yaml")
	os.WriteFile(m.config, []byte("compaction:\n  target_ratio: 0.9\n  tokn_limit: 5\n"), 0o600)
	code, _, errs := m.run("threads")
	if code != 2 || !strings.Contains(errs, "bad.yaml:3") || !strings.Contains(errs, "tokn_limit") {
		t.Fatalf("bad config: exit %d, %q", code, errs)
	}
}

func TestDeleteNeedsYes(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	if code, _, errs := m.run("delete", "t1"); code != 2 || !strings.Contains(errs, "--yes") {
		t.Fatalf("delete without --yes off a terminal: exit %d %q", code, errs)
	}
	m.must("delete", "t1", "--yes")
	if code, _, _ := m.run("export", "t1"); code != 1 {
		t.Fatal("thread still there after delete")
	}
}

func TestSearchAnyText(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	for _, q := range []string{"gpt-4o", "C++", `"quoted"`, "a AND", "NOT", "x*", "{col}: y", "NEAR(a b)"} {
		if code, out, errs := m.run("search", q, "--json"); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") {
			t.Errorf("search %q: exit %d %q %q", q, code, out, errs)
		}
	}
}

func TestConfigAndVersion(t *testing.T) {
	m := newMemctl(t)
	var cfg map[string]any
	if err := json.Unmarshal([]byte(m.must("config", "--json")), &cfg); err != nil {
		t.Fatal(err)
	}
	casc := cfg["cascade"].([]any)
	if len(casc) != 1 || casc[0].(map[string]any)["type"] != "extractive" || cfg["source"] != "built-in default" {
		t.Fatalf("default config: %v", cfg)
	}
	if out := m.must("version"); !strings.HasPrefix(out, "memctl ") {
		t.Fatalf("version: %q", out)
	}
}

// TestThreadsLoadsNoTokenizer: listing threads reads stored counts; a fresh process running
// `memctl threads` (and `reports`, `export`) never loads an encoding.
func TestThreadsLoadsNoTokenizer(t *testing.T) {
	if db := os.Getenv("MEMCTL_TEST_THREADS_DB"); db != "" {
		for _, args := range [][]string{{"threads"}, {"reports"}, {"export", "t1"}, {"show", "t1"}} {
			var out, errb bytes.Buffer
			if code := run(context.Background(), append([]string{"--db", db, "--json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
				fmt.Printf("%v: exit %d: %s\n", args, code, errb.String())
			}
		}
		fmt.Printf("loaded=%d\n", tokenizer.Loaded())
		return
	}
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	cmd := exec.Command(os.Args[0], "-test.run=^TestThreadsLoadsNoTokenizer$")
	cmd.Env = append(os.Environ(), "MEMCTL_TEST_THREADS_DB="+m.db)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "exit") || !strings.Contains(string(out), "loaded=0\n") {
		t.Fatalf("memctl threads loaded an encoding (or failed): %v\n%s", err, out)
	}
}
