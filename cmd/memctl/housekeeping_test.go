package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
)

// reportIDs lists the ids and statuses `memctl reports --json` prints.
func reportIDs(t *testing.T, m *memctl) map[int]string {
	t.Helper()
	var reps []map[string]any
	if err := json.Unmarshal([]byte(m.must("reports", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, r := range reps {
		out[int(r["id"].(float64))] = r["status"].(string)
	}
	return out
}

func compactID(t *testing.T, m *memctl, args ...string) (int, string) {
	t.Helper()
	_, out, errs := m.run(append(append([]string{"compact"}, args...), "--json")...)
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep["id"] == nil {
		t.Fatalf("compact %v: %q %s", args, out, errs)
	}
	return int(rep["id"].(float64)), rep["status"].(string)
}

// failingConfig writes a config whose only provider cannot be reached.
func failingConfig(t *testing.T, m *memctl) string {
	path := filepath.Join(m.dir, "failing.yaml")
	os.WriteFile(path, []byte("offline: false\ncascade:\n  - name: nowhere\n    model: m\n    base_url: http://127.0.0.1:1/v1\n    timeout: 2s\n    max_attempts: 1\n"), 0o600)
	return path
}

// TestPruneKeepsHistoryAndAppliedReports: prune --older-than 0s deletes the reverted and failed
// reports (and their attempts), and leaves every thread's history, active context and every
// applied compaction's report byte-identical; the compaction an applied one was planned on
// and a thread's newest ineffective one (the wait rule reads it) stay. --dry-run deletes nothing.
func TestPruneKeepsHistoryAndAppliedReports(t *testing.T) {
	m := newMemctl(t)
	files := conversationFiles(t)
	m.must("import", "t1", files[0])
	m.must("import", "t2", files[1])
	first, st1 := compactID(t, m, "t1", "--limit", "3000", "--force")
	// 1,600: at 2,000 the first compaction's context (1,711 tokens, the 815-token newest user
	// message held) is within the limit with nothing new to summarize.
	reverted, st2 := compactID(t, m, "t1", "--limit", "1600", "--force")
	m.must("revert", strconv.Itoa(reverted))
	third, st3 := compactID(t, m, "t1", "--limit", "1600", "--force") // planned on first
	m.config = failingConfig(t, m)
	failed, st4 := compactID(t, m, "t2", "--limit", "3000", "--force")
	m.config = ""
	ineffective, st5 := compactID(t, m, "t2", "--limit", "10000000", "--force")
	if st1 != "applied" || st2 != "applied" || st3 != "applied" || st4 != "failed" || st5 != "ineffective" {
		t.Fatalf("setup statuses %s %s %s %s %s", st1, st2, st3, st4, st5)
	}
	var failedAttempts []any
	json.Unmarshal([]byte(m.must("attempts", "--compaction", strconv.Itoa(failed), "--json")), &failedAttempts)
	if len(failedAttempts) == 0 {
		t.Fatal("the failed compaction has no attempts")
	}

	snapshot := func() string {
		var b strings.Builder
		for _, th := range []string{"t1", "t2"} {
			b.WriteString(m.must("export", th, "--all"))
			b.WriteString(m.must("export", th))
		}
		for _, id := range []int{first, third} {
			b.WriteString(m.must("report", strconv.Itoa(id), "--json"))
		}
		return b.String()
	}
	before := snapshot()
	reportsBefore := reportIDs(t, m)

	out := m.must("prune", "--older-than", "0s", "--dry-run")
	if !strings.HasPrefix(out, "would delete 2 reports and ") || !strings.Contains(out, fmt.Sprintf("\n%d ", reverted)) {
		t.Fatalf("dry run printed:\n%s", out)
	}
	if got := reportIDs(t, m); fmt.Sprint(got) != fmt.Sprint(reportsBefore) {
		t.Fatalf("--dry-run deleted reports: %v, was %v", got, reportsBefore)
	}

	var res struct {
		DryRun  bool `json:"dry_run"`
		Reports []struct {
			ID     int    `json:"id"`
			Status string `json:"status"`
		} `json:"reports"`
		Attempts int `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(m.must("prune", "--older-than", "0s", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.DryRun || len(res.Reports) != 2 || res.Reports[0].ID != reverted || res.Reports[1].ID != failed || res.Attempts < len(failedAttempts) {
		t.Fatalf("prune said %+v", res)
	}
	if after := snapshot(); after != before {
		t.Fatal("prune changed a history, an active context or an applied report")
	}
	got := reportIDs(t, m)
	want := map[int]string{first: "applied", third: "applied", ineffective: "ineffective"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reports after prune: %v, want %v", got, want)
	}
	if out := m.must("attempts", "--compaction", strconv.Itoa(failed), "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("attempts of the pruned compaction remain: %s", out)
	}
	m.must("check")
	// A long age deletes nothing that is new.
	if out := m.must("prune", "--older-than", "30d"); !strings.HasPrefix(out, "deleted 0 reports and 0 attempts") {
		t.Fatalf("prune 30d: %s", out)
	}
	for _, args := range [][]string{{"prune"}, {"prune", "--older-than", "-1h"}, {"prune", "--older-than", "soon"}} {
		if code, _, errs := m.run(args...); code != 2 || !strings.Contains(errs, "--older-than") {
			t.Errorf("%v: exit %d %q, want 2 naming --older-than", args, code, errs)
		}
	}
}

// TestBackupCommand: the copy is an intact database (check passes on it) with the same threads,
// mode 0600; an existing PATH is refused with exit 2 and left as it was.
func TestBackupCommand(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	m.must("compact", "t1", "--limit", "3000", "--force")
	dest := filepath.Join(m.dir, "it's; DROP TABLE threads; --.db")
	if out := m.must("backup", dest); !strings.HasPrefix(out, "backed up ") {
		t.Fatalf("backup printed %q", out)
	}
	st, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("backup mode %v, want 0600", st.Mode().Perm())
	}
	orig := m.must("export", "t1", "--all") + m.must("export", "t1") + m.must("reports", "--json")
	src := m.db
	m.db = dest
	m.must("check")
	if copyOut := m.must("export", "t1", "--all") + m.must("export", "t1") + m.must("reports", "--json"); copyOut != orig {
		t.Fatal("the backup differs from the database")
	}
	m.db = src
	m.must("threads") // the source is intact too
	os.WriteFile(filepath.Join(m.dir, "taken"), []byte("mine"), 0o644)
	code, _, errs := m.run("backup", filepath.Join(m.dir, "taken"))
	if code != 2 || !strings.Contains(errs, "already exists") {
		t.Fatalf("existing PATH: exit %d %q, want 2", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(m.dir, "taken")); string(b) != "mine" {
		t.Fatal("backup overwrote an existing file")
	}
}

// TestCheckAndVacuum: check passes on a sound database and exits 1 naming the broken part of
// one with a message whose thread does not exist; vacuum keeps the content.
func TestCheckAndVacuum(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	if out := m.must("check"); !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("check: %q", out)
	}
	before := m.must("export", "t1", "--all")
	m.must("delete", "t1", "--yes")
	m.must("import", "t1", conversationFiles(t)[0])
	if out := m.must("vacuum"); !strings.HasPrefix(out, "vacuumed ") {
		t.Fatalf("vacuum: %q", out)
	}
	if m.must("export", "t1", "--all") != before {
		t.Fatal("vacuum changed the history")
	}
	// Break it: a message of no thread, written with foreign keys off.
	ctx := context.Background()
	sqldb, err := db.OpenSQLite(ctx, m.db)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"PRAGMA foreign_keys = OFF",
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES ('ghost', 1, 'user', 'x', '{}', 1, 0)`} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	sqldb.Close()
	code, out, errs := m.run("check", "--json")
	if code != 1 || !strings.Contains(errs, "foreign_key_check") || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("check of a broken database: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestProvidersReset: reset clears a failed provider's cooldown and failure count; an unknown
// name exits 1; NAME with --all, or neither, exits 2; --all clears every provider.
func TestProvidersReset(t *testing.T) {
	m := newMemctl(t)
	m.config = failingConfig(t, m)
	m.must("import", "t1", conversationFiles(t)[0])
	m.run("compact", "t1", "--limit", "3000", "--force")
	status := func() map[string]any {
		var provs []map[string]any
		json.Unmarshal([]byte(m.must("providers", "--json")), &provs)
		return provs[0]
	}
	if p := status(); p["cooling_until"] == nil || p["consecutive_failures"] != 1.0 {
		t.Fatalf("after a failure: %v", p)
	}
	if out := m.must("providers", "reset", "nowhere"); !strings.Contains(out, "cleared") {
		t.Fatalf("reset: %q", out)
	}
	if p := status(); p["cooling_until"] != nil || p["consecutive_failures"] != 0.0 || p["last_error"] != "" {
		t.Fatalf("after reset: %v", p)
	}
	if out := m.must("providers", "reset", "nowhere", "--json"); !strings.Contains(out, `"cleared": false`) {
		t.Fatalf("second reset: %q", out)
	}
	if code, _, errs := m.run("providers", "reset", "ghost"); code != 1 || !strings.Contains(errs, `unknown provider "ghost"`) {
		t.Fatalf("unknown provider: exit %d %q", code, errs)
	}
	for _, args := range [][]string{{"providers", "reset"}, {"providers", "reset", "nowhere", "--all"}} {
		if code, _, _ := m.run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	m.run("compact", "t1", "--limit", "3000", "--force")
	if out := m.must("providers", "reset", "--all"); !strings.Contains(out, "of 1 providers") {
		t.Fatalf("reset --all: %q", out)
	}
	if p := status(); p["cooling_until"] != nil || p["consecutive_failures"] != 0.0 {
		t.Fatalf("after reset --all: %v", p)
	}
}

// TestLogsHoldNoSecrets: with --log-level debug, a compaction whose first provider fails (its
// server answers with the request's Authorization header and body in the error) logs the
// compaction, each attempt and the cooldown with their keys, and no log line holds the API key
// of api_key_env or the secret planted in the conversation.
func TestLogsHoldNoSecrets(t *testing.T) {
	const apiKey = "sk-proj-PLANTEDkey0123456789abcdefghijklmnopqrstuv"
	const secret = "AKIAPLANTED0SECRET12"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"error":{"message":"upstream refused %s for %s"}}`, r.Header.Get("Authorization"), body)
	}))
	defer srv.Close()
	m := newMemctl(t)
	t.Setenv("MEMCTL_TEST_KEY", apiKey)
	m.config = filepath.Join(m.dir, "cfg.yaml")
	os.WriteFile(m.config, []byte(fmt.Sprintf(`cascade:
  - name: echo
    base_url: %s/v1
    model: m
    api_key_env: MEMCTL_TEST_KEY
    max_attempts: 2
    max_wait: 1s
  - name: offline
    type: extractive
`, srv.URL)), 0o600)
	conv := filepath.Join(m.dir, "c.jsonl")
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"role":"user","content":"turn %d: my AWS key is %s, keep it safe; %s"}`, i, secret, strings.Repeat("words ", 40)),
			fmt.Sprintf(`{"role":"assistant","content":"noted %d"}`, i))
	}
	os.WriteFile(conv, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	m.must("import", "t1", conv)
	// The second compaction runs at a smaller limit, so that it has messages to fold in beside
	// the first one's summary (a summary alone is not summarized again). The order is fixed: at
	// 2000 after 1500 there would be nothing new to summarize.
	for _, run := range []struct{ format, limit string }{{"json", "2000"}, {"text", "1500"}} {
		format, limit := run.format, run.limit
		m.must("providers", "reset", "--all")
		code, _, errs := m.run("--log-level", "debug", "--log-format", format, "compact", "t1", "--limit", limit, "--force")
		if code != 0 {
			t.Fatalf("compact: exit %d: %s", code, errs)
		}
		for _, want := range []string{"compaction started", "provider attempt", "provider cooling down", "compaction ended", "echo", "offline", "compaction_id", "duration_ms", "outcome"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%s log lacks %q:\n%s", format, want, errs)
			}
		}
		for _, bad := range []string{apiKey, "PLANTEDkey", secret} {
			if strings.Contains(errs, bad) {
				t.Errorf("%s log holds %q:\n%s", format, bad, errs)
			}
		}
		if format == "json" {
			for line := range strings.SplitSeq(strings.TrimSpace(errs), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil {
					t.Errorf("not a JSON log record: %q", line)
				}
			}
		}
	}
	if code, _, errs := m.run("--log-format", "xml", "threads"); code != 2 || !strings.Contains(errs, "--log-format") {
		t.Fatalf("--log-format xml: exit %d %q", code, errs)
	}
	// The default level is warn: a successful compaction logs nothing.
	m.config = ""
	if _, _, errs := m.run("compact", "t1", "--limit", "1500", "--force"); errs != "" {
		t.Fatalf("default level logged: %q", errs)
	}
}

// TestVersionStamps: the values a release stamps with -ldflags are printed.
func TestVersionStamps(t *testing.T) {
	m := newMemctl(t)
	version, commit, date = "v9.8.7", "0123abcd", "2030-01-02T03:04:05Z"
	t.Cleanup(func() { version, commit, date = "", "", "" })
	out := m.must("version")
	if !strings.HasPrefix(out, "memctl v9.8.7 (commit 0123abcd") || !strings.Contains(out, "built 2030-01-02T03:04:05Z") {
		t.Fatalf("version: %q", out)
	}
	var v map[string]any
	json.Unmarshal([]byte(m.must("version", "--json")), &v)
	if v["version"] != "v9.8.7" || v["commit"] != "0123abcd" || v["date"] != "2030-01-02T03:04:05Z" {
		t.Fatalf("version --json: %v", v)
	}
}
