package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEvalFile: the airline conversation under three strategies prints one row each, and --json
// lists every probe asked with its expected and given answer. Its time is logged, not asserted
// (a wall-clock bound flakes under -race on a loaded machine): docs/eval.md gives the figure.
func TestEvalFile(t *testing.T) {
	m := newMemctl(t)
	file := testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	args := []string{"eval", file, "--limit", "4000", "--strategy", "summarize", "--strategy", "mask", "--strategy", "window"}
	// The table's shape with two probes of each kind (the replay is the same); every probe in
	// the JSON.
	start := time.Now()
	out := m.must(append(args, "--max-probes", "2")...)
	t.Logf("%s\n%s", time.Since(start), out)
	// A header, three rows, and the note that says what CUT is (mask cannot fit 4,000).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "CONFIG") || !strings.HasPrefix(lines[4], "(CUT: ") {
		t.Fatalf("want a header, three rows and the CUT note:\n%s", out)
	}
	for i, s := range []string{"summarize", "mask", "window"} {
		if f := strings.Fields(lines[i+1]); f[0] != s || f[1] != "4000" {
			t.Errorf("row %d: %q, want %s at 4000", i+1, lines[i+1], s)
		}
	}
	var res struct {
		Configs []struct {
			Name   string `json:"name"`
			Asked  int    `json:"probes_asked"`
			Probes []struct {
				Kind     string  `json:"kind"`
				Question string  `json:"question"`
				Expected string  `json:"expected"`
				Answer   *string `json:"answer"`
				Where    *string `json:"where"`
				Correct  *bool   `json:"correct"`
			} `json:"probes"`
			Recall map[string]float64 `json:"recall"`
		} `json:"configs"`
	}
	// Under -short (the race run), five probes of each kind, not all: every one asked is
	// still checked in the JSON.
	if testing.Short() {
		args = append(args, "--max-probes", "5")
	}
	start = time.Now()
	js := m.must(append(args, "--json")...)
	t.Logf("--json: %s", time.Since(start))
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Configs) != 3 {
		t.Fatalf("%d configurations in the JSON", len(res.Configs))
	}
	for _, c := range res.Configs {
		if c.Asked == 0 || len(c.Probes) != c.Asked {
			t.Errorf("%s: %d probes listed, %d asked", c.Name, len(c.Probes), c.Asked)
		}
		kinds := map[string]bool{}
		for _, p := range c.Probes {
			kinds[p.Kind] = true
			if p.Question == "" || p.Expected == "" || p.Answer == nil || p.Where == nil || p.Correct == nil {
				t.Fatalf("%s: probe without question, expected, answer, where or correct: %+v", c.Name, p)
			}
		}
		for _, k := range []string{"recall", "constraint", "continuation"} {
			if !kinds[k] {
				t.Errorf("%s: no %s probe", c.Name, k)
			}
		}
	}
}

// TestEvalThread: a thread of the database is measured and left as it was.
func TestEvalThread(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", testdata("conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl"))
	before := m.must("show", "t1", "--json")
	out := m.must("eval", "t1", "--limit", "3000", "--strategy", "summarize", "--json")
	if !strings.Contains(out, `"probes_asked"`) {
		t.Fatalf("no result: %s", out)
	}
	if after := m.must("show", "t1", "--json"); after != before {
		t.Error("eval changed the thread")
	}
	if code, _, errs := m.run("eval", "nope", "--limit", "3000"); code != 1 || !strings.Contains(errs, "nope") {
		t.Errorf("a missing thread: exit %d, %s", code, errs)
	}
}

// TestEvalUsage: bad flags are exit 2, naming the flag.
func TestEvalUsage(t *testing.T) {
	m := newMemctl(t)
	file := testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "bogus"}, "--strategy bogus"},
		{[]string{"--limit", "0"}, "--limit 0"},
		{[]string{"--answer-with", "http://127.0.0.1:1/x"}, "--answer-with"},
		{[]string{"--answer-with", "http://127.0.0.1:1/v1"}, "needs --model"},
		{[]string{"--model", "m"}, "needs --answer-with"},
		{[]string{"--max-probes", "-1"}, "--max-probes -1"},
	} {
		code, _, errs := m.run(append([]string{"eval", file}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %q", c.args, code, errs, c.want)
		}
	}
}

// TestEvalAnswerWith: the answering model gets the key from the environment, and an error of
// it never shows the key.
func TestEvalAnswerWith(t *testing.T) {
	m := newMemctl(t)
	t.Setenv("MEMCTL_EVAL_API_KEY", "sk-secret-eval")
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		http.Error(w, "quota exceeded", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	code, out, errs := m.run("eval", testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"), "--limit", "4000",
		"--answer-with", srv.URL+"/v1", "--model", "m")
	if code != 1 || !strings.Contains(errs, "429") {
		t.Errorf("exit %d, %q: want 1 with the server's status", code, errs)
	}
	if auth != "Bearer sk-secret-eval" {
		t.Errorf("Authorization %q", auth)
	}
	if strings.Contains(out+errs, "sk-secret-eval") {
		t.Error("the key was printed")
	}
}

// TestEvalInterrupted: a run stopped (Ctrl-C) prints what it measured, marked, and exits 1.
func TestEvalInterrupted(t *testing.T) {
	m := newMemctl(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--db", m.db, "eval", testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"), "--limit", "4000"},
		strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "CONFIG") || !strings.Contains(out.String(), "interrupted") || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestEvalConfigFiles: each --config FILE is a configuration of its own, named by the file's
// base name, with its compaction settings (--limit overriding its limit) beside the
// --strategy ones; a file that cannot be read or parsed, or a name given twice, is exit 2
// naming the file.
func TestEvalConfigFiles(t *testing.T) {
	m := newMemctl(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	small := write("small.yaml", "compaction:\n  token_limit: 3000\n  strategy: summarize\n")
	large := write("large.yaml", "compaction:\n  token_limit: 6000\n  strategy: hybrid\n  mask:\n    keep_tool_results: 2\n")
	file := testdata("conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl")
	type row struct {
		Name        string `json:"name"`
		Strategy    string `json:"strategy"`
		Limit       int    `json:"token_limit"`
		Compactions int    `json:"compactions"`
		Asked       int    `json:"probes_asked"`
	}
	rows := func(args ...string) []row {
		t.Helper()
		var res struct {
			Configs []row `json:"configs"`
		}
		out := m.must(append([]string{"eval", file, "--max-probes", "2", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res.Configs
	}
	got := rows("--strategy", "window", "--config", small, "--config", large)
	want := []row{{Name: "window", Strategy: "window"}, {Name: "small", Strategy: "summarize", Limit: 3000}, {Name: "large", Strategy: "hybrid", Limit: 6000}}
	if len(got) != len(want) {
		t.Fatalf("configurations %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Strategy != w.Strategy || (w.Limit != 0 && g.Limit != w.Limit) || g.Asked == 0 {
			t.Errorf("configuration %d: %+v, want %+v", i+1, g, w)
		}
	}
	if got[1].Compactions == 0 {
		t.Errorf("small (3000 tokens) never compacted: %+v", got[1])
	}
	for _, g := range rows("--config", small, "--config", large, "--limit", "4000") {
		if g.Limit != 4000 {
			t.Errorf("%s: limit %d under --limit 4000", g.Name, g.Limit)
		}
	}
	out := m.must("eval", file, "--max-probes", "2", "--config", small)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "small ") {
		t.Errorf("the table does not name the file's configuration small:\n%s", out)
	}
	bad := write("bad.yaml", "compaction:\n  token_limit: lots\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--config", bad}, "bad.yaml"},
		{[]string{"--config", small, "--config", small}, "already named small"},
	} {
		code, _, errs := m.run(append([]string{"eval", file}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %q", c.args, code, errs, c.want)
		}
	}
}

// TestEvalPage: --html writes the comparison as a page, mode 0600: a chart whose bars are each
// configuration's recall, compacted and baseline, and the table; a page in a directory that
// does not exist is exit 2 naming it, before anything is measured.
func TestEvalPage(t *testing.T) {
	m := newMemctl(t)
	file := testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	page := filepath.Join(t.TempDir(), "eval.html")
	out := m.must("eval", file, "--limit", "4000", "--strategy", "summarize", "--strategy", "window", "--max-probes", "5", "--json", "--html", page)
	var res struct {
		Configs []struct {
			Name     string             `json:"name"`
			Recall   map[string]float64 `json:"recall"`
			Baseline map[string]float64 `json:"baseline_recall"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("page mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(page)
	html := string(b)
	if !strings.Contains(html, "<svg") || !strings.Contains(html, "<table>") {
		t.Fatalf("no chart or table:\n%.500s", html)
	}
	for _, c := range res.Configs {
		for _, bar := range []struct {
			class string
			v     float64
		}{{"c", c.Recall["all"]}, {"b", c.Baseline["all"]}} {
			want := fmt.Sprintf(`<rect class="%s" x="150" y="`, bar.class)
			tip := fmt.Sprintf("<title>%s", c.Name)
			if bar.class == "b" {
				tip += " baseline"
			}
			tip += fmt.Sprintf(": %.2f</title>", bar.v)
			width := fmt.Sprintf(`width="%d"`, int(bar.v*320+0.5))
			found := false
			for _, line := range strings.Split(html, "\n") {
				if strings.HasPrefix(line, want) && strings.Contains(line, tip) && strings.Contains(line, width) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no bar %s with %s and %s", c.Name, bar.class, width, tip)
			}
		}
	}
	bad := filepath.Join(t.TempDir(), "missing", "eval.html")
	code, _, errs := m.run("eval", file, "--limit", "4000", "--strategy", "window", "--max-probes", "2", "--html", bad)
	if code != 2 || !strings.Contains(errs, "--html "+bad) {
		t.Errorf("an unwritable page: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Dir(bad)); !os.IsNotExist(err) {
		t.Errorf("the page's directory was made: %v", err)
	}
}
