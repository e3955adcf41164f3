package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
)

// The tests of this file run memctl on PostgreSQL: they need the server of
// MEMCASCADE_TEST_POSTGRES (testdb.Env) and are skipped, naming it, without it. Each gets a
// schema of its own, dropped when it ends.

// pgDatabase returns the URL of a fresh, empty schema on the test server.
func pgDatabase(t *testing.T) string {
	t.Helper()
	return testdb.Schema(t, os.Getenv(testdb.Env))
}

// helperEnv makes the test binary, run again by a test of this file, act as memctl (see
// TestMemctlProcessHelper) instead of running tests.
const helperEnv = "MEMCTL_TEST_PROCESS"

// TestMemctlProcessHelper is no test of its own: it is the body of the child processes the
// tests below start (the test binary run again with helperEnv set). With helperEnv=memctl it
// runs memctl with the arguments after "--" and exits with its code; with helperEnv=append it
// appends messages one import at a time (see appendHelper).
func TestMemctlProcessHelper(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "memctl":
		os.Exit(run(context.Background(), flag.Args(), os.Stdin, os.Stdout, os.Stderr))
	case "append":
		os.Exit(appendHelper())
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown helper\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(3)
	}
}

// memctlProcess returns a command running memctl with args in a process of its own, with no
// memctl setting of the user's environment.
func memctlProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMemctlProcessHelper$", "--"}, args...)...)
	cmd.Env = append(childEnv(t), helperEnv+"=memctl")
	return cmd
}

// childEnv is the environment of a child process: the test's, without memctl's variables, with
// the per-user directories in a temporary directory of t.
func childEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMCTL_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	dir := t.TempDir()
	return append(env, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
}

// shownDB is how memctl prints a database's name: the only output that must differ between a
// file and a server (a path, a URL without user, password or parameters).
func shownDB(name string) string { return db.Display(name) }

// TestPostgresSameOutput runs the same memctl session on an SQLite file and on PostgreSQL for
// every recorded conversation — import, compact --force with the built-in offline defaults
// (twice: at the config's limit, and at a limit that makes the extractive summarizer apply),
// export, show, threads, reports, report, attempts, check — and requires the same output.
//
// Normalised, each for its reason:
//   - timestamps of this run and measured durations (created_at, updated_at, started_at,
//     duration_ms, the MS columns, "N ms"): the two sessions run at different times, through
//     normalise, the golden files' normaliser;
//   - the database's name ($DB) in check's output: a path against a URL.
//
// check's human line is left out: it names what was verified, which differs by backend (see
// TestPostgresHousekeeping).
//
// search is compared apart (see searchHits): the two engines rank matches (bm25, ts_rank) and
// choose snippets differently, so the hits are compared as a set and each snippet must mark
// a match.
func TestPostgresSameOutput(t *testing.T) {
	words := []string{"reservation", "cancel*", "user", "error", "the file", "summary earlier"}
	for _, file := range conversationFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			m := newMemctl(t)
			pg := pgDatabase(t)
			steps := [][]string{
				{"import", "t1", file, "--json"},
				{"compact", "t1", "--force", "--json"},
				{"compact", "t1", "--force", "--limit", "4000", "--json"},
				{"export", "t1", "--all"},
				{"export", "t1"},
				{"show", "t1"},
				{"show", "t1", "--json"},
				{"show", "t1", "--all"},
				{"show", "t1", "--all", "--json"},
				{"threads"},
				{"threads", "--json"},
				{"reports"},
				{"reports", "--json"},
				{"report", "1"},
				{"report", "2"},
				{"report", "2", "--json"},
				{"attempts"},
				{"attempts", "--json"},
				{"check", "--json"},
			}
			outputs := map[string][]string{}
			for _, name := range []string{filepath.Join(m.dir, "m.db"), pg} {
				m.db = name
				for _, args := range steps {
					out := m.must(args...)
					out = strings.ReplaceAll(out, shownDB(name), "$DB")
					outputs[name] = append(outputs[name], normalise(out, m.dir))
				}
			}
			sq, pq := outputs[filepath.Join(m.dir, "m.db")], outputs[pg]
			for i, args := range steps {
				if sq[i] != pq[i] {
					t.Errorf("memctl %s: SQLite and PostgreSQL differ:\n%s", strings.Join(args, " "), firstDiff(sq[i], pq[i]))
				}
			}
			// The session did compact: report 2 is applied (so the comparison covers a summary).
			var rep struct{ Status string }
			if err := json.Unmarshal([]byte(sq[15]), &rep); err != nil || rep.Status != "applied" {
				t.Fatalf("report 2 is %q (%v), want applied", rep.Status, err)
			}
			found := 0
			for _, w := range words {
				s, p := searchHits(t, m, filepath.Join(m.dir, "m.db"), w), searchHits(t, m, pg, w)
				if !reflect.DeepEqual(s, p) {
					t.Errorf("search %q: SQLite finds %v, PostgreSQL %v", w, s, p)
				}
				found += len(s)
			}
			if found == 0 {
				t.Error("no search found anything: the comparison compared nothing")
			}
			// $MEMCTL_DB names the server as --db does.
			m.db = ""
			t.Setenv("MEMCTL_DB", pg)
			var out, errb bytes.Buffer
			if code := run(context.Background(), []string{"threads", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
				t.Fatalf("MEMCTL_DB=postgres://... memctl threads: exit %d: %s", code, errb.String())
			}
			if got := normalise(out.String(), m.dir); got != pq[10] {
				t.Errorf("threads with $MEMCTL_DB differs from threads with --db:\n%s", firstDiff(pq[10], got))
			}
		})
	}
}

// searchHits runs `memctl search WORDS --json` on database name with no limit and returns its
// hits sorted (thread, seq, role, state, compaction: everything but the snippet), checking
// that every snippet marks a match.
func searchHits(t *testing.T, m *memctl, name, words string) []string {
	t.Helper()
	m.db = name
	var hits []struct {
		Thread       string `json:"thread"`
		Seq          int64  `json:"seq"`
		Role         string `json:"role"`
		Archived     bool   `json:"archived"`
		Snippet      string `json:"snippet"`
		CompactionID int64  `json:"compaction_id"`
	}
	if err := json.Unmarshal([]byte(m.must("search", words, "--limit", "100000", "--json")), &hits); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		if !strings.Contains(h.Snippet, "[") || !strings.Contains(h.Snippet, "]") {
			t.Errorf("%s: search %q: the snippet of %s #%d marks no match: %q", name, words, h.Thread, h.Seq, h.Snippet)
		}
		out = append(out, fmt.Sprintf("%s#%d %s archived=%v compaction=%d", h.Thread, h.Seq, h.Role, h.Archived, h.CompactionID))
	}
	slices.Sort(out)
	return out
}

// firstDiff shows the first line where a and b differ, with its number.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  sqlite:   %q\n  postgres: %q", i+1, x, y)
		}
	}
	return "(same lines)"
}

// slowServer is an OpenAI-compatible chat server whose answers wait until want requests have
// arrived (or a minute has passed): compactions that ask it truly overlap.
type slowServer struct {
	*httptest.Server
	want     int64
	requests atomic.Int64
	release  chan struct{}
	once     sync.Once
}

func newSlowServer(t *testing.T, want int64) *slowServer {
	s := &slowServer{want: want, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if s.requests.Add(1) >= s.want {
			s.once.Do(func() { close(s.release) })
		}
		select {
		case <-s.release:
		case <-time.After(time.Minute):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",`+
			`"message":{"role":"assistant","content":"Summary: the user and the agent talked about the task; nothing is left open."}}],`+
			`"usage":{"prompt_tokens":1000,"completion_tokens":20,"total_tokens":1020}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestPostgresCompactionRaceTwoProcesses: two memctl processes compact the same thread on
// PostgreSQL at the same time, through a provider that answers only once both have asked:
// exactly one compaction is applied and the other fails, naming the conflict, in its exit
// code (1), on its stderr and in its report.
func TestPostgresCompactionRaceTwoProcesses(t *testing.T) {
	pg := pgDatabase(t)
	srv := newSlowServer(t, 2)
	cfg := filepath.Join(t.TempDir(), "memctl.yaml")
	body := fmt.Sprintf("compaction:\n  token_limit: 4000\ncascade:\n  - name: slow\n    base_url: %s/v1\n    model: m\n    context_window: 128000\n", srv.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newMemctl(t)
	m.db, m.config = pg, cfg
	m.must("import", "t", conversationFiles(t)[0])
	before := m.must("export", "t", "--all")

	type result struct {
		code        int
		out, errout string
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		cmd := memctlProcess(t, "--config", cfg, "--db", pg, "compact", "t", "--force", "--json")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			err := cmd.Wait()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				results[i] = result{code: -1, errout: err.Error()}
				return
			}
			results[i] = result{code: cmd.ProcessState.ExitCode(), out: out.String(), errout: errb.String()}
		})
	}
	wg.Wait()
	if n := srv.requests.Load(); n < 2 {
		t.Fatalf("the provider got %d requests: the two compactions did not both ask it", n)
	}
	applied, failed := 0, 0
	for i, r := range results {
		var rep struct{ Status, Error string }
		json.Unmarshal([]byte(r.out), &rep)
		switch {
		case r.code == 0 && rep.Status == "applied" && r.errout == "":
			applied++
		case r.code == 1 && rep.Status == "failed" && strings.Contains(rep.Error, "conflict") && lastLineNames(r.errout, "memctl: ", "conflict"):
			failed++
		default:
			t.Errorf("process %d: exit %d, stdout %s, stderr %s", i, r.code, r.out, r.errout)
		}
	}
	if applied != 1 || failed != 1 {
		t.Fatalf("%d applied and %d failed, want 1 and 1", applied, failed)
	}
	var reps []struct{ Status, Error string }
	if err := json.Unmarshal([]byte(m.must("reports", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	statuses := map[string]int{}
	for _, r := range reps {
		statuses[r.Status]++
	}
	if len(reps) != 2 || statuses["applied"] != 1 || statuses["failed"] != 1 {
		t.Fatalf("reports: %+v, want one applied and one failed", reps)
	}
	if after := m.must("export", "t", "--all"); after != before {
		t.Fatal("the history changed")
	}
	m.must("check")
}

// lastLineNames reports whether the last line of stderr (the error; a warning logged about the
// failed compaction comes before it) starts with prefix and contains what.
func lastLineNames(stderr, prefix, what string) bool {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	return strings.HasPrefix(last, prefix) && strings.Contains(last, what)
}

// The appending helper's environment.
const (
	appendDBEnv     = "MEMCTL_TEST_APPEND_DB"
	appendWriterEnv = "MEMCTL_TEST_APPEND_WRITER"
	appendCountEnv  = "MEMCTL_TEST_APPEND_COUNT"
)

// appendCount is how many messages each writer of TestPostgresAppendFourProcesses appends:
// 200, and 50 under -short (the four processes still append at once all the while).
func appendCount() int {
	if testing.Short() {
		return 50
	}
	return 200
}

// appendMessage is the content of writer w's message i.
func appendMessage(w string, i int) string { return fmt.Sprintf("writer %s message %d", w, i) }

// appendHelper imports the messages appendCountEnv says into thread "t", one `memctl import`
// each (run in this process, a store opened and closed each time), and returns 0 when all
// succeeded.
func appendHelper() int {
	name, w := os.Getenv(appendDBEnv), os.Getenv(appendWriterEnv)
	count, err := strconv.Atoi(os.Getenv(appendCountEnv))
	if err != nil || count <= 0 {
		fmt.Fprintf(os.Stderr, "writer %s: %s=%q: want a count of messages above 0\n", w, appendCountEnv, os.Getenv(appendCountEnv))
		return 1
	}
	for i := range count {
		msg, _ := json.Marshal(map[string]string{"role": "user", "content": appendMessage(w, i)})
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"--db", name, "import", "t", "-"}, bytes.NewReader(msg), &out, &errb); code != 0 {
			fmt.Fprintf(os.Stderr, "writer %s, message %d: exit %d: %s", w, i, code, errb.String())
			return 1
		}
	}
	return 0
}

// TestPostgresAppendFourProcesses: four processes append to one thread of a new database on
// PostgreSQL at once (the first ones create the schema and the thread), 200 messages each
// (50 under -short), one import at a time. Afterwards the thread holds the 800 messages (200)
// at seqs 1..800 (1..200), none lost or repeated, each writer's in the order it wrote them.
func TestPostgresAppendFourProcesses(t *testing.T) {
	pg := pgDatabase(t)
	count := appendCount()
	writers := []string{"w1", "w2", "w3", "w4"}
	var cmds []*exec.Cmd
	var errs []*bytes.Buffer
	for _, w := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemctlProcessHelper$")
		cmd.Env = append(childEnv(t), helperEnv+"=append", appendDBEnv+"="+pg, appendWriterEnv+"="+w, appendCountEnv+"="+strconv.Itoa(count))
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, errs = append(cmds, cmd), append(errs, &errb)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %s: %v: %s", writers[i], err, errs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	m := newMemctl(t)
	m.db = pg
	var shown struct {
		Messages []struct {
			Seq     int64 `json:"seq"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(m.must("show", "t", "--all", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	total := count * len(writers)
	if len(shown.Messages) != total {
		t.Fatalf("the thread holds %d messages, want %d", len(shown.Messages), total)
	}
	next := map[string]int{}
	re := regexp.MustCompile(`^writer (w\d) message (\d+)$`)
	for i, msg := range shown.Messages {
		if msg.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: the seqs are not 1..%d", i, msg.Seq, total)
		}
		mm := re.FindStringSubmatch(msg.Message.Content)
		if mm == nil {
			t.Fatalf("seq %d: unexpected content %q", msg.Seq, msg.Message.Content)
		}
		if want := appendMessage(mm[1], next[mm[1]]); msg.Message.Content != want {
			t.Fatalf("seq %d: %q, want %q next from %s (lost, repeated or out of order)", msg.Seq, msg.Message.Content, want, mm[1])
		}
		next[mm[1]]++
	}
	for _, w := range writers {
		if next[w] != count {
			t.Errorf("writer %s: %d messages stored, want %d", w, next[w], count)
		}
	}
	m.must("check")
}

// TestPostgresHousekeeping runs the housekeeping commands on PostgreSQL: check, vacuum,
// backup (refused, saying why), providers, attempts, set, prune and delete.
func TestPostgresHousekeeping(t *testing.T) {
	m := newMemctl(t)
	pg := pgDatabase(t)
	m.db = pg
	files := conversationFiles(t)
	m.must("import", "t1", files[0])
	m.must("import", "t2", files[1])
	m.must("compact", "t1", "--force", "--limit", "4000")
	shown := shownDB(pg)
	if strings.Contains(shown, "search_path") || shown == pg {
		t.Fatalf("the database is shown as %q: with its parameters", shown)
	}

	if out := m.must("check"); out != "ok: "+shown+" (schema version, message sequences)\n" {
		t.Errorf("check: %q", out)
	}
	var chk map[string]any
	json.Unmarshal([]byte(m.must("check", "--json")), &chk)
	if want := map[string]any{"database": shown, "ok": true, "error": ""}; !reflect.DeepEqual(chk, want) {
		t.Errorf("check --json: %v, want %v", chk, want)
	}

	var vac struct {
		Database    string `json:"database"`
		BytesBefore int64  `json:"bytes_before"`
		BytesAfter  int64  `json:"bytes_after"`
	}
	if err := json.Unmarshal([]byte(m.must("vacuum", "--json")), &vac); err != nil {
		t.Fatal(err)
	}
	if vac.Database != shown || vac.BytesBefore <= 0 || vac.BytesAfter <= 0 {
		t.Errorf("vacuum --json: %+v", vac)
	}
	if out := m.must("vacuum"); !strings.HasPrefix(out, "vacuumed "+shown+": ") {
		t.Errorf("vacuum: %q", out)
	}

	dest := filepath.Join(m.dir, "copy.db")
	code, out, errs := m.run("backup", dest)
	if code != 2 || out != "" || !strings.Contains(errs, "PostgreSQL") || !strings.Contains(errs, "pg_dump") || strings.Count(errs, "\n") != 1 {
		t.Errorf("backup on PostgreSQL: exit %d, stdout %q, stderr %q; want exit 2 and one line naming PostgreSQL and pg_dump", code, out, errs)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Error("a refused backup wrote a file")
	}

	var provs []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(m.must("providers", "--json")), &provs); err != nil || len(provs) != 1 || provs[0].Name != "offline" {
		t.Errorf("providers --json: %+v (%v), want the built-in offline rung", provs, err)
	}
	var atts []struct {
		Compaction int64  `json:"compaction_id"`
		Provider   string `json:"provider"`
		Outcome    string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(m.must("attempts", "--json")), &atts); err != nil || len(atts) != 1 || atts[0].Provider != "offline" || atts[0].Outcome != "ok" || atts[0].Compaction != 1 {
		t.Errorf("attempts --json: %+v (%v), want the one attempt of compaction 1", atts, err)
	}
	if out := m.must("attempts", "--compaction", "1"); !strings.Contains(out, "offline") {
		t.Errorf("attempts --compaction 1: %q", out)
	}

	m.must("set", "t2", "--limit", "9000", "--ratio", "0.4")
	ths := threadsJSON(t, m)
	if got := ths["t2"]["settings"]; !reflect.DeepEqual(got, map[string]any{"token_limit": 9000.0, "target_ratio": 0.4}) {
		t.Errorf("settings of t2 after set: %v", got)
	}
	m.must("set", "t2", "--unset", "token_limit")
	if got := threadsJSON(t, m)["t2"]["settings"]; !reflect.DeepEqual(got, map[string]any{"target_ratio": 0.4}) {
		t.Errorf("settings of t2 after set --unset token_limit: %v", got)
	}

	// prune: a failed compaction goes, the applied one stays.
	m.config = failingConfig(t, m)
	if code, _, _ := m.run("compact", "t2", "--force", "--limit", "4000"); code != 1 {
		t.Fatalf("compaction with a failing provider: exit %d, want 1", code)
	}
	m.config = ""
	before := reportIDs(t, m)
	var pr struct {
		Reports []struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(m.must("prune", "--older-than", "0s", "--json")), &pr); err != nil {
		t.Fatal(err)
	}
	after := reportIDs(t, m)
	if len(pr.Reports) != 1 || pr.Reports[0].Status != "failed" || len(after) != len(before)-1 || after[1] != "applied" {
		t.Errorf("prune: %+v; reports before %v, after %v", pr, before, after)
	}

	exported := m.must("export", "t1", "--all")
	m.must("delete", "t2", "--yes")
	if code, _, errs := m.run("export", "t2"); code != 1 || !strings.Contains(errs, "t2") {
		t.Errorf("export of a deleted thread: exit %d, %q", code, errs)
	}
	if got := m.must("export", "t1", "--all"); got != exported {
		t.Error("delete t2 changed t1")
	}
	m.must("check")
}

// TestPostgresPasswordNeverShown: memctl on a server URL with a password that cannot be
// reached (nothing listening, a host that does not resolve, a port that is no number) exits 1
// and never prints the password, on stderr or stdout, for a command that reads and one that
// writes.
func TestPostgresPasswordNeverShown(t *testing.T) {
	const secret = "SECRETPW"
	urls := []string{
		"postgres://u:" + secret + "@127.0.0.1:1/x",
		"postgres://u:" + secret + "@no-such-host.invalid:5432/x?connect_timeout=5",
		"postgres://u:" + secret + "@127.0.0.1:port/x",
		"postgres://u:" + secret + "@127.0.0.1:99999/x",
	}
	for _, u := range urls {
		for _, args := range [][]string{{"threads"}, {"import", "t", "-"}, {"check", "--json"}, {"config"}} {
			m := newMemctl(t)
			m.db = u
			code, out, errs := m.runIn(`{"role":"user","content":"hi"}`, args...)
			if strings.Contains(out+errs, secret) {
				t.Errorf("--db %s %s: the password is printed:\nstdout %q\nstderr %q", db.Display(u), args[0], out, errs)
			}
			if args[0] == "config" {
				continue // reads no database
			}
			if code != 1 || !strings.HasPrefix(errs, "memctl: ") || !strings.Contains(errs, "127.0.0.1") && !strings.Contains(errs, "no-such-host") {
				t.Errorf("--db %s %s: exit %d, stderr %q: want exit 1 naming the server", db.Display(u), args[0], code, errs)
			}
		}
	}
	// The same through $MEMCTL_DB, in a process of its own.
	cmd := memctlProcess(t, "threads")
	cmd.Env = append(cmd.Env, "MEMCTL_DB="+urls[0])
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(string(out), secret) {
		t.Errorf("MEMCTL_DB=%s memctl threads: %v: %q", db.Display(urls[0]), err, out)
	}
}
