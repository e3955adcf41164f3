// Command bench measures memcascade on the recorded conversations of testdata, scaled up, and
// prints a table that can be compared across machines. Run it with bench/run, which builds
// memctl and installs OpenAI's JavaScript tokenizer (npm tiktoken) for the comparison.
//
//	go run ./bench [-memctl PATH] [-js DIR] [-postgres URL] [-scale N] [-quick]
//
// The writers, compact and threads steps measure SQLite and, given a PostgreSQL server
// (-postgres, default $MEMCASCADE_TEST_POSTGRES), PostgreSQL too, each measurement in a schema
// of its own that is dropped after it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/cputime"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-count-file" {
		// The Go side of the whole-process tokenizer comparison.
		if err := countFile(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "-copy-server" {
		// The floor of the turncost step: a server that only reads request bodies.
		if err := copyServe(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	memctl := flag.String("memctl", "", "a built memctl binary (for the process-level rows)")
	js := flag.String("js", "", "a directory with node_modules/tiktoken installed (for the comparison row)")
	scale := flag.Int("scale", 150, "copies of the testdata conversations in the append corpus")
	quick := flag.Bool("quick", false, "smaller sizes, for a fast check that the bench runs")
	only := flag.String("only", "", "run only these steps, comma-separated: append, writers, active, compact, compact100k, windows, tokens, import, message, threads, search, serve, servemem, turncost, agents, life")
	postgres := flag.String("postgres", os.Getenv(postgresEnv), "a PostgreSQL server URL for the PostgreSQL rows (default $"+postgresEnv+"; none: SQLite only)")
	windowMaxOutput := flag.Int("window-max-output", 1024, "max_output_tokens of the summarizer in the windows step")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the append step (its counting, import and raw insert) to this file")
	flag.Parse()
	b := &bench{memctl: *memctl, js: *js, scale: *scale, quick: *quick, only: *only, windowMaxOutput: *windowMaxOutput, postgres: *postgres, cpuprofile: *cpuprofile}
	if b.quick {
		b.scale = 10
	}
	if err := b.run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	memctl, js string
	scale      int
	quick      bool
	only       string
	// windowMaxOutput is the summarizer's max_output_tokens in the windows step.
	windowMaxOutput int
	dir             string
	rows            []row
	// postgres is the URL of a PostgreSQL server ("": SQLite rows only); pgAdmin a pool on it
	// that makes and drops the bench's schemas.
	postgres string
	pgAdmin  *sql.DB
	// cpuprofile is a file for a CPU profile of the append step ("": none).
	cpuprofile string
}

type row struct{ name, value, target, verdict string }

func (b *bench) add(name, value, target string, ok *bool) {
	v := ""
	if ok != nil {
		v = "ok"
		if !*ok {
			v = "MISSED"
		}
	}
	b.rows = append(b.rows, row{name, value, target, v})
	fmt.Fprintf(os.Stderr, "  %s: %s\n", name, value)
}

func ptr(b bool) *bool { return &b }

func (b *bench) run() error {
	var err error
	if b.dir, err = os.MkdirTemp("", "memcascade-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	defer func() {
		if b.pgAdmin != nil {
			b.pgAdmin.Close()
		}
	}()
	if b.postgres == "" {
		b.add("PostgreSQL rows", "not run (no -postgres URL and $"+postgresEnv+" is not set)", "", nil)
	}
	corpus, err := loadCorpus(b.scale)
	if err != nil {
		return err
	}
	steps := []struct {
		name string
		run  func([]conversation) error
	}{{"append", b.append}, {"writers", b.writers}, {"active", b.activeRead}, {"compact", b.compaction}, {"compact100k", b.bigCompaction}, {"windows", b.windowRows}, {"tokens", b.tokenizer}, {"import", b.bigImport}, {"message", b.bigMessage}, {"threads", b.threads}, {"search", b.searchThread}, {"serve", b.serveRows}, {"servemem", b.serveMemRows}, {"turncost", b.turnCostRows}, {"agents", b.agentRows}, {"life", b.lifeRows}}
	for _, step := range steps {
		if b.only != "" && !slices.Contains(strings.Split(b.only, ","), step.name) {
			continue
		}
		if err := step.run(corpus); err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
	}
	b.print()
	return nil
}

func (b *bench) print() {
	host, _ := os.Hostname()
	cpu := cpuModel()
	fmt.Printf("memcascade bench: %s/%s, %d CPUs (%s), %s, host %s, %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, runtime.Version(), host, time.Now().UTC().Format("2006-01-02"))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "| measure\t| result\t| target\t| |")
	fmt.Fprintln(w, "|---\t|---\t|---\t|---|")
	for _, r := range b.rows {
		fmt.Fprintf(w, "| %s\t| %s\t| %s\t| %s |\n", r.name, r.value, r.target, r.verdict)
	}
	w.Flush()
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "cpu unknown"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "cpu unknown"
}

// conversation is one scaled copy of a testdata conversation: its messages as JSON lines.
type conversation struct {
	lines [][]byte
	msgs  []chat.Message
}

// loadCorpus reads the testdata conversations and makes copies of them, each with its text
// made distinct by a copy number, so no layer can cache its way through.
func loadCorpus(copies int) ([]conversation, error) {
	files, err := filepath.Glob("testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no testdata conversations (run from the repository root): %v", err)
	}
	var out []conversation
	for k := range copies {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var c conversation
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				var m chat.Message
				if err := json.Unmarshal(line, &m); err != nil {
					return nil, err
				}
				if t := m.Text(); t != "" {
					m.Content, _ = json.Marshal(fmt.Sprintf("[copy %d] %s", k, t))
				}
				raw, _ := json.Marshal(m)
				c.lines, c.msgs = append(c.lines, raw), append(c.msgs, m)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func corpusBytes(cs []conversation) (msgs, size int) {
	for _, c := range cs {
		msgs += len(c.lines)
		for _, l := range c.lines {
			size += len(l) + 1
		}
	}
	return msgs, size
}

func openStore(path string) (*memory.Store, error) { return memory.Open(context.Background(), path) }

// append: import throughput with counting and full-text indexing, beside the tokenizer alone
// on the same messages and a raw insert of the same rows. The import and the raw insert are
// interleaved, one conversation (one thread, one transaction) at a time, so that a change of
// the machine's load during the run weighs on both alike. The counting runs first, over the
// whole corpus, as the import meets it: counting each conversation just before its import
// would leave its pieces in the tokenizer's cache for the import to find.
//
// The raw insert writes through the same driver (modernc SQLite, pure Go) what the import
// writes, and nothing else: the thread row; each message row with every column (the content's
// text, name, tool calls as JSON, tool call id, the stored JSON, the count, the time) by the
// store's prepared InsertMessage; the full-text index by one INSERT ... SELECT of the messages
// not yet indexed, as the store's indexer does, which moves the mark of what is indexed
// (fts_state); the thread's tail by SetThreadTail; one transaction per thread. The import is
// timed until its messages are indexed (db.Handle.IndexPending, after its commit). Its rows, counts and texts are computed before it is timed, so it is the floor of an
// import that must decode, validate and count each message.
func (b *bench) append(corpus []conversation) error {
	ctx := context.Background()
	nmsgs, size := corpusBytes(corpus)
	counter, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		return err
	}
	counter.CountText("warm up") // load the encoding outside the timings

	s, err := openStore(filepath.Join(b.dir, "append.db"))
	if err != nil {
		return err
	}
	defer s.Close()
	raw, err := db.OpenSQLite(ctx, filepath.Join(b.dir, "raw.db"))
	if err != nil {
		return err
	}
	defer raw.Close()
	rawQ, err := db.Prepare(ctx, raw)
	if err != nil {
		return err
	}
	defer rawQ.Close()
	stop, err := b.startProfile()
	if err != nil {
		return err
	}
	// Wall and CPU time of each: the CPU time of this process (every thread: the garbage
	// collector's too) is less sensitive to the load of others.
	var tCount, tImport, tRaw, cCount, cImport, cRaw time.Duration
	timed := func(wall, cpu *time.Duration, f func() error) error {
		c0, w0 := cputime.Self(), time.Now()
		err := f()
		*wall += time.Since(w0)
		*cpu += cputime.Self() - c0
		return err
	}
	tokens := make([][]int, len(corpus))
	timed(&tCount, &cCount, func() error {
		for i, c := range corpus {
			tokens[i] = make([]int, len(c.msgs))
			for j, m := range c.msgs {
				tokens[i][j] = counter.CountMessage(m)
			}
		}
		return nil
	})
	var sqlScript bytes.Buffer
	for i, c := range corpus {
		thread := fmt.Sprintf("c%d", i)
		input := bytes.Join(c.lines, []byte("\n"))
		err := timed(&tImport, &cImport, func() error {
			if _, err := s.Import(ctx, thread, bytes.NewReader(input), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				return err
			}
			return s.DB().IndexPending(ctx)
		})
		if err != nil {
			return err
		}
		rows := rawRows(thread, c, tokens[i])
		writeSQL(&sqlScript, thread, rows)
		if err := timed(&tRaw, &cRaw, func() error { return rawInsert(ctx, raw, rawQ, thread, rows) }); err != nil {
			return err
		}
	}
	stop()
	imported, err := db.OpenSQLite(ctx, filepath.Join(b.dir, "append.db"))
	if err != nil {
		return err
	}
	defer imported.Close()
	if err := sameRows(ctx, imported, raw, len(corpus)); err != nil {
		return err
	}

	mb := float64(size) / 1e6
	rate := func(d, cpu time.Duration) string {
		return fmt.Sprintf("%.0f msg/s, %.1f MB/s (%s; CPU %s)", float64(nmsgs)/d.Seconds(), mb/d.Seconds(), d.Round(time.Millisecond), cpu.Round(time.Millisecond))
	}
	b.add(fmt.Sprintf("append: import of %d messages (%.1f MB) in %d threads, counted and indexed", nmsgs, mb, len(corpus)), rate(tImport, cImport), "", nil)
	b.add("append: token counting alone, same messages", rate(tCount, cCount), "", nil)
	b.add("append: raw insert of the same rows, same driver (modernc SQLite: the store's prepared queries, one transaction per thread)", rate(tRaw, cRaw), "", nil)
	ratio := tImport.Seconds() / tCount.Seconds()
	b.add("append: import time / counting time", fmt.Sprintf("%.2f", ratio), "", nil)
	floor := tImport.Seconds() / (tCount + tRaw).Seconds()
	b.add("append: import time / (counting time + raw insert time)", fmt.Sprintf("%.2f (CPU time: %.2f)", floor, cImport.Seconds()/(cCount+cRaw).Seconds()), "<= 1.2", ptr(floor <= 1.2))
	return b.sqliteCLI(sqlScript.Bytes(), tImport, tCount, cImport, cCount, rate)
}

// rawRows computes the message rows the store writes for conversation c in thread: what it
// stores of each message, as README's data model says (the stored JSON is the line as given,
// compact).
func rawRows(thread string, c conversation, tokens []int) []db.InsertMessageParams {
	now := time.Now().UnixMilli()
	rows := make([]db.InsertMessageParams, len(c.msgs))
	for j, m := range c.msgs {
		var calls string
		if len(m.ToolCalls) > 0 {
			b, _ := json.Marshal(m.ToolCalls)
			calls = string(b)
		}
		rows[j] = db.InsertMessageParams{ThreadID: thread, Seq: int64(j + 1), Role: m.Role,
			Content: nullString(db.MakeStorable(m.Text())), Name: nullString(m.Name),
			ToolCalls: nullString(calls), ToolCallID: nullString(m.ToolCallID),
			Raw: string(c.lines[j]), Tokens: int64(tokens[j]), CreatedAt: now}
	}
	return rows
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// rawIndex indexes the messages not yet indexed and moves the mark of what is indexed.
const rawIndex = `INSERT INTO messages_fts (rowid, body)
SELECT id, body FROM messages_text WHERE id > (SELECT indexed_id FROM fts_state);
UPDATE fts_state SET indexed_id = (SELECT coalesce(max(id), 0) FROM messages);`

// rawInsert writes rows into thread as an import does, in one transaction.
func rawInsert(ctx context.Context, raw *sql.DB, rawQ *db.Queries, thread string, rows []db.InsertMessageParams) error {
	return db.SQLiteTx(ctx, raw, func(tx *sql.Tx) error {
		q := rawQ.WithTx(tx)
		now := time.Now().UnixMilli()
		if _, err := q.InsertThread(ctx, db.InsertThreadParams{ID: thread, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		for _, r := range rows {
			if err := q.InsertMessage(ctx, r); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, rawIndex); err != nil {
			return err
		}
		last := int64(len(rows))
		return q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: last, OpenCalls: "[]", UpdatedAt: now, ID: thread})
	})
}

// sameRows checks that the import and the raw insert wrote the same messages (every column but
// the id and the time) and the same full-text index (the same hits for a few words), through
// the store's queries.
func sameRows(ctx context.Context, store, raw *sql.DB, threads int) error {
	a, b := db.New(store), db.New(raw)
	for i := range threads {
		thread := fmt.Sprintf("c%d", i)
		imported, err := a.ListMessages(ctx, thread)
		if err != nil {
			return err
		}
		inserted, err := b.ListMessages(ctx, thread)
		if err != nil {
			return err
		}
		if len(imported) != len(inserted) {
			return fmt.Errorf("thread %s: the import wrote %d messages, the raw insert %d", thread, len(imported), len(inserted))
		}
		for j := range imported {
			x, y := imported[j], inserted[j]
			x.ID, x.CreatedAt, y.ID, y.CreatedAt = 0, 0, 0, 0
			if x != y {
				return fmt.Errorf("thread %s, message %d differs between the import and the raw insert:\n%.300v\n%.300v", thread, j+1, x, y)
			}
		}
	}
	for _, word := range []string{`"flight"`, `"reservation"`, `"marshmallow"`, `"copy"`} {
		p := db.SearchMessagesParams{Query: word, MaxRows: 1 << 20}
		x, err := a.SearchMessages(ctx, p)
		if err != nil {
			return err
		}
		y, err := b.SearchMessages(ctx, p)
		if err != nil {
			return err
		}
		if len(x) != len(y) || len(x) == 0 {
			return fmt.Errorf("the full-text index finds %s in %d messages of the import, %d of the raw insert", word, len(x), len(y))
		}
	}
	return nil
}

// writeSQL appends to w the SQL text of rawInsert for the sqlite3 command-line shell: the same
// rows, the index built by one INSERT ... SELECT per thread (concat_ws spelled out: the shell
// may be older than 3.44). Every string is written as a hexadecimal blob cast to text, so no
// text of a message is read as SQL.
func writeSQL(w *bytes.Buffer, thread string, rows []db.InsertMessageParams) {
	str := func(s string) string { return "CAST(X'" + hex.EncodeToString([]byte(s)) + "' AS TEXT)" }
	lit := func(s sql.NullString) string {
		if !s.Valid {
			return "NULL"
		}
		return str(s.String)
	}
	now := time.Now().UnixMilli()
	fmt.Fprintf(w, "BEGIN IMMEDIATE;\nINSERT INTO threads (id, model, encoding, metadata, created_at, updated_at) VALUES (%s, 'gpt-4o', 'o200k_base', '{}', %d, %d);\n", str(thread), now, now)
	for _, r := range rows {
		fmt.Fprintf(w, "INSERT INTO messages (thread_id, seq, role, content, name, tool_calls, tool_call_id, raw, tokens, created_at) VALUES (%s, %d, %s, %s, %s, %s, %s, %s, %d, %d);\n",
			str(r.ThreadID), r.Seq, str(r.Role), lit(r.Content), lit(r.Name), lit(r.ToolCalls), lit(r.ToolCallID), str(r.Raw), r.Tokens, r.CreatedAt)
	}
	fmt.Fprintf(w, "INSERT INTO messages_fts (rowid, body) SELECT id, substr(coalesce(' ' || content, '') || coalesce(' ' || name, '') || coalesce(' ' || tool_calls, ''), 2) FROM messages WHERE thread_id = %s;\nUPDATE fts_state SET indexed_id = (SELECT max(id) FROM messages);\n", str(thread))
	fmt.Fprintf(w, "UPDATE threads SET last_seq = %d, open_calls = '[]', updated_at = %d WHERE id = %s;\nCOMMIT;\n", len(rows), now, str(thread))
}

// sqliteCLI runs the SQL of the raw insert through the sqlite3 command-line shell (C SQLite),
// on a database made by the store, when the shell is installed: the floor of a C build.
func (b *bench) sqliteCLI(script []byte, tImport, tCount, cImport, cCount time.Duration, rate func(d, cpu time.Duration) string) error {
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		b.add("append: raw insert of the same rows, C SQLite (sqlite3 shell)", "not run (no sqlite3 on PATH)", "", nil)
		return nil
	}
	path := filepath.Join(b.dir, "cli.db")
	s, err := openStore(path)
	if err != nil {
		return err
	}
	s.Close()
	scriptPath := filepath.Join(b.dir, "raw.sql")
	if err := os.WriteFile(scriptPath, append([]byte("PRAGMA journal_mode = WAL;\nPRAGMA synchronous = NORMAL;\n"), script...), 0o600); err != nil {
		return err
	}
	f, err := os.Open(scriptPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(shell, "-bail", path)
	cmd.Stdin = f
	d, _, err := timeProcess(cmd)
	if err != nil {
		return fmt.Errorf("sqlite3: %w", err)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	version, _ := exec.Command(shell, "--version").Output()
	b.add(fmt.Sprintf("append: raw insert of the same rows, C SQLite %s (sqlite3 shell, each row's SQL text parsed, its strings written in hexadecimal)", strings.Fields(string(version) + " ?")[0]), rate(d, cpu), "", nil)
	b.add("append: import time / (counting time + C SQLite insert time)", fmt.Sprintf("%.2f (CPU time: %.2f)", tImport.Seconds()/(tCount+d).Seconds(), cImport.Seconds()/(cCount+cpu).Seconds()), "", nil)
	return nil
}

// startProfile starts the CPU profile of -cpuprofile, if any, and returns what stops it.
func (b *bench) startProfile() (func(), error) {
	if b.cpuprofile == "" {
		return func() {}, nil
	}
	f, err := os.Create(b.cpuprofile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// zeroLatency is a summarizer that answers at once, to measure the compactor's own work.
type zeroLatency struct{}

func (zeroLatency) Run(ctx context.Context, id int64, task llm.Task) (llm.Result, error) {
	text, err := task(ctx, llm.Target{Name: "zero", Model: "zero"}, zeroCompleter{})
	return llm.Result{Text: text, Provider: "zero", Model: "zero"}, err
}

type zeroCompleter struct{}

func (zeroCompleter) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Text: "The user asked many questions; the assistant answered them.", FinishReason: "stop"}, nil
}

func shortMessages(n int, from int) []chat.Message {
	out := make([]chat.Message, 0, n)
	for i := range n {
		role := chat.RoleUser
		if i%2 == 1 {
			role = chat.RoleAssistant
		}
		out = append(out, chat.TextMessage(role, fmt.Sprintf("message %d about order W%06d and flight HAT%03d", from+i, from+i, (from+i)%300)))
	}
	return out
}

// activeRead: a thread with 200 active and 100,000 archived messages against one with 200.
func (b *bench) activeRead([]conversation) error {
	ctx := context.Background()
	archived := 100_000
	if b.quick {
		archived = 10_000
	}
	s, err := openStore(filepath.Join(b.dir, "active.db"))
	if err != nil {
		return err
	}
	defer s.Close()
	sys := chat.TextMessage(chat.RoleSystem, "You are a support agent.")
	if _, err := s.Append(ctx, "long", []chat.Message{sys}, memory.AppendOptions{}); err != nil {
		return err
	}
	for i := 0; i < archived; i += 5000 {
		if _, err := s.Append(ctx, "long", shortMessages(5000, i), memory.AppendOptions{}); err != nil {
			return err
		}
	}
	if _, err := s.Append(ctx, "long", shortMessages(200, archived), memory.AppendOptions{}); err != nil {
		return err
	}
	// Compact "long" so that its newest 200 messages stay active: the kept budget is exactly
	// the system prompt and those 200.
	a, err := s.Active(ctx, "long")
	if err != nil {
		return err
	}
	keep := a.Entries[0].Tokens
	for _, e := range a.Entries[len(a.Entries)-200:] {
		keep += e.Tokens
	}
	c := compact.New(s, zeroLatency{}, compact.Settings{TokenLimit: 2 * keep, TargetRatio: 0.5, TriggerRatio: 0.8,
		SummaryMaxTokens: keep / 2, TotalTimeout: time.Hour})
	if _, err := c.Compact(ctx, "long", compact.Options{Force: true}); err != nil {
		return err
	}
	la, _ := s.Active(ctx, "long")
	// "short" has as many messages as the active context of "long", and no history beyond.
	short := append([]chat.Message{sys}, shortMessages(len(la.Entries)-1, archived)...)
	if _, err := s.Append(ctx, "short", short, memory.AppendOptions{}); err != nil {
		return err
	}
	sa, _ := s.Active(ctx, "short")
	timeIt := func(thread string) time.Duration {
		var ds []time.Duration
		for range 200 {
			start := time.Now()
			if _, err := s.Active(ctx, thread); err != nil {
				panic(err)
			}
			ds = append(ds, time.Since(start))
		}
		return median(ds)
	}
	timeIt("long")
	tl, ts := timeIt("long"), timeIt("short")
	ratio := tl.Seconds() / ts.Seconds()
	b.add(fmt.Sprintf("active read: %d active + %d archived", len(la.Entries), archived), tl.Round(time.Microsecond).String(), "", nil)
	b.add(fmt.Sprintf("active read: %d messages, no history", len(sa.Entries)), ts.Round(time.Microsecond).String(), "", nil)
	b.add("active read: ratio", fmt.Sprintf("%.2f", ratio), "<= 1.5", ptr(ratio <= 1.5))
	return nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// compaction: the compactor's overhead with a zero-latency provider, on each backend.
func (b *bench) compaction([]conversation) error {
	for _, backend := range b.backends() {
		for _, n := range []int{1_000, 10_000} {
			err := b.onBackend(backend, "compact.db", func(name string) error { return b.compactionOf(backend, name, n) })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// compactionOf measures the median of five forced compactions of n messages in the store at name.
func (b *bench) compactionOf(backend, name string, n int) error {
	ctx := context.Background()
	s, err := openStore(name)
	if err != nil {
		return err
	}
	defer s.Close()
	var ds, cpus []time.Duration
	for i := range 5 {
		thread := fmt.Sprintf("t%d-%d", n, i)
		msgs := append([]chat.Message{chat.TextMessage(chat.RoleSystem, "You are a support agent.")}, shortMessages(n, 0)...)
		if _, err := s.Append(ctx, thread, msgs, memory.AppendOptions{}); err != nil {
			return err
		}
		// The messages are indexed for search before the compaction is timed, as the append
		// did before schema version 12: the store's indexer would otherwise index them while
		// the compaction runs, and their cost would count as the compaction's. So is the
		// write-ahead log moved into the database: the store's checkpointer does it 250 ms
		// after the append's commit, which fell inside the timed compaction in two runs of
		// five, on the other CPU.
		if err := s.DB().IndexPending(ctx); err != nil {
			return err
		}
		if err := s.DB().Checkpoint(ctx); err != nil {
			return err
		}
		a, _ := s.Active(ctx, thread)
		c := compact.New(s, zeroLatency{}, compact.Settings{TokenLimit: a.Tokens / 2, SummaryMaxTokens: 2048})
		start, c0 := time.Now(), cputime.Self()
		rep, err := c.Compact(ctx, thread, compact.Options{Force: true})
		if err != nil {
			return err
		}
		ds, cpus = append(ds, time.Since(start)), append(cpus, cputime.Self()-c0)
		if rep.Status != memory.StatusApplied {
			return fmt.Errorf("compaction of %d messages: %s", n, rep.Status)
		}
	}
	d, worst := median(ds), slices.Max(ds)
	var ok *bool
	target := ""
	if n == 10_000 {
		// Issue 36 asks for every run of the five under 50 ms, not their median.
		target, ok = "< 50 ms, every run of 5", ptr(worst < 50*time.Millisecond)
	}
	label := fmt.Sprintf("compaction overhead, %d active messages (plan, render, commit, recount)", n)
	if backend != sqliteBackend {
		label += ", " + backend
	}
	// The CPU time of the process over the compaction (every thread: the garbage collector's
	// too) says what the wall time says when the machine is shared with other work.
	b.add(label, fmt.Sprintf("%s, slowest %s (CPU %s)", d.Round(100*time.Microsecond), worst.Round(100*time.Microsecond), median(cpus).Round(100*time.Microsecond)), target, ok)
	return nil
}

// bigCompaction: memctl compact --force of a thread of 100,000 messages of about 160 bytes
// (a support agent's turns: a request, a tool call, its result, an answer), whole process, with
// the default configuration (its offline extractive summarizer): the peak resident memory of
// the process beside its target.
func (b *bench) bigCompaction([]conversation) error {
	const target = "< 150 MB"
	n := 100_000
	if b.quick {
		n = 10_000
	}
	label := fmt.Sprintf("compaction of %d messages (memctl compact --force): peak RSS", n)
	if b.memctl == "" {
		b.add(label, "not run (needs -memctl)", target, nil)
		return nil
	}
	path := filepath.Join(b.dir, "compact100k.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	size := 0
	for i := 0; i < n; i += 4 {
		turn := []string{
			fmt.Sprintf(`{"role":"user","content":"Please check order #W%07d for flight HAT%03d, booked on 2024-%02d-%02d."}`, i, i%997, 1+i%12, 1+i%28),
			fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"get_order_details","arguments":"{\"order_id\": \"#W%07d\"}"}}]}`, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"{\"order_id\": \"#W%07d\", \"status\": \"delivered\", \"total\": %d.%02d, \"address\": \"%d Main Street, Springfield\", \"items\": [\"item %d\"]}"}`, i, i, 10+i%900, i%100, 1+i%2000, i),
			fmt.Sprintf(`{"role":"assistant","content":"Order #W%07d was delivered to %d Main Street; it cost $%d.%02d."}`, i, 1+i%2000, 10+i%900, i%100),
		}
		for _, l := range turn[:min(4, n-i)] {
			w.WriteString(l)
			w.WriteByte('\n')
			size += len(l) + 1
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	f.Close()
	dbPath := filepath.Join(b.dir, "compact100k.db")
	if _, err := exec.Command(b.memctl, "--db", dbPath, "import", "big", path).CombinedOutput(); err != nil {
		return fmt.Errorf("memctl import: %w", err)
	}
	os.Remove(path)
	runtime.GC()
	cmd := exec.Command(b.memctl, "--db", dbPath, "compact", "big", "--force", "--json")
	cmd.Dir = b.dir
	var out bytes.Buffer
	cmd.Stdout = &out
	rss, d, err := peakRSS(cmd)
	if err != nil {
		return err
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var rep struct {
		Status             string `json:"status"`
		SummarizedMessages int    `json:"summarized_messages"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Status != "applied" {
		return fmt.Errorf("memctl compact: status %q (%v): %s", rep.Status, err, out.String())
	}
	b.add(label, fmt.Sprintf("%d MB, %s (CPU %s), %.1f MB thread, %d messages summarized", rss>>20, d.Round(100*time.Millisecond),
		cpu.Round(100*time.Millisecond), float64(size)/1e6, rep.SummarizedMessages), target, ptr(rss < 150<<20))
	return nil
}

// tokenizer: counting throughput, exactness, and OpenAI's JavaScript tokenizer on the same
// text, whole process against whole process.
func (b *bench) tokenizer(corpus []conversation) error {
	c, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		return err
	}
	vectors := map[string][]int{tokencount.EncodingCL100k: {15339, 1917}, tokencount.EncodingO200k: {24912, 2375}}
	exact := true
	for enc, want := range vectors {
		tc, _ := tokencount.NewCounter(enc)
		exact = exact && slices.Equal(tc.Encode("hello world"), want)
	}
	b.add("tokens: reference vectors (hello world, cl100k and o200k)", map[bool]string{true: "exact", false: "WRONG"}[exact], "exact", ptr(exact))

	// One file of distinct text: every content string and tool argument of the corpus.
	path := filepath.Join(b.dir, "text.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	size := 0
	for _, conv := range corpus {
		for _, m := range conv.msgs {
			for _, t := range append([]string{m.Text()}, argsOf(m)...) {
				if t == "" {
					continue
				}
				line, _ := json.Marshal(t)
				w.Write(line)
				w.WriteByte('\n')
				size += len(t)
			}
		}
	}
	w.Flush()
	f.Close()
	start := time.Now()
	total := 0
	for _, conv := range corpus {
		for _, m := range conv.msgs {
			total += c.CountText(m.Text())
			for _, a := range argsOf(m) {
				total += c.CountText(a)
			}
		}
	}
	d := time.Since(start)
	b.add(fmt.Sprintf("tokens: o200k counting, one core, %.1f MB of distinct text", float64(size)/1e6), fmt.Sprintf("%.1f MB/s", float64(size)/1e6/d.Seconds()), "", nil)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	goTime, goOut, err := timeProcess(exec.Command(self, "-count-file", path))
	if err != nil {
		return fmt.Errorf("go count: %w", err)
	}
	b.add("tokens: whole process, load + count the file (Go, this package)", goTime.Round(time.Millisecond).String(), "", nil)
	if b.js == "" {
		b.add("tokens: whole process, npm tiktoken (WASM) on node", "not run (bench/run installs it)", "", nil)
		return nil
	}
	jsTime, jsOut, err := timeProcess(exec.Command("node", filepath.Join(b.js, "count.mjs"), path))
	if err != nil {
		return fmt.Errorf("node count: %w", err)
	}
	b.add("tokens: whole process, npm tiktoken (WASM) on node", jsTime.Round(time.Millisecond).String(), "", nil)
	same := strings.TrimSpace(goOut) == strings.TrimSpace(jsOut)
	b.add("tokens: same token total as npm tiktoken", fmt.Sprintf("%s vs %s", strings.TrimSpace(goOut), strings.TrimSpace(jsOut)), "equal", ptr(same))
	ratio := goTime.Seconds() / jsTime.Seconds()
	b.add("tokens: Go time / npm tiktoken time", fmt.Sprintf("%.2f", ratio), "<= 0.5", ptr(ratio <= 0.5))
	return nil
}

func argsOf(m chat.Message) []string {
	var out []string
	for _, c := range m.ToolCalls {
		out = append(out, c.Function.Arguments)
	}
	return out
}

// countFile counts the tokens of every JSON string line of a file, on every core.
func countFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	c, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		return err
	}
	lines := bytes.Split(data, []byte("\n"))
	workers := runtime.NumCPU()
	totals := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(lines); i += workers {
				if len(lines[i]) == 0 {
					continue
				}
				var s string
				if json.Unmarshal(lines[i], &s) == nil {
					totals[w] += c.CountText(s)
				}
			}
		})
	}
	wg.Wait()
	sum := 0
	for _, t := range totals {
		sum += t
	}
	fmt.Println(sum)
	return nil
}

// timeProcess runs cmd and returns its wall time and stdout.
func timeProcess(cmd *exec.Cmd) (time.Duration, string, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, errb.String())
	}
	return time.Since(start), out.String(), err
}

// bigImport: memctl import of a 100 MB JSONL file, its peak resident memory.
func (b *bench) bigImport(corpus []conversation) error {
	if b.memctl == "" {
		b.add("import of a 100 MB JSONL file: peak RSS", "not run (needs -memctl)", "< 256 MB", nil)
		return nil
	}
	want := 100 << 20
	if b.quick {
		want = 10 << 20
	}
	path := filepath.Join(b.dir, "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	size, copyN := 0, 0
	for size < want {
		// One long thread: the conversations one after another, ids renamed per copy so the
		// tool calls stay valid.
		for _, c := range corpus {
			for _, line := range c.lines {
				l := bytes.ReplaceAll(line, []byte(`"call_`), fmt.Appendf(nil, `"c%d_call_`, copyN))
				w.Write(l)
				w.WriteByte('\n')
				size += len(l) + 1
			}
			copyN++
			if size >= want {
				break
			}
		}
	}
	w.Flush()
	f.Close()
	cmd := exec.Command(b.memctl, "--db", filepath.Join(b.dir, "big.db"), "import", "big", path)
	cmd.Dir = b.dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	// The peak is read from /proc while it runs: the rusage of a child started by this (large)
	// process would count this process's memory, which the child shares until its exec.
	rss, done := int64(0), make(chan struct{})
	go func() {
		for {
			rss = max(rss, hwm(cmd.Process.Pid))
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	err = cmd.Wait()
	d := time.Since(start)
	close(done)
	if err != nil {
		return fmt.Errorf("memctl import: %v: %s", err, errb.String())
	}
	b.add(fmt.Sprintf("import of a %d MB JSONL file (one thread)", size>>20), fmt.Sprintf("%s, %.1f MB/s", d.Round(100*time.Millisecond), float64(size)/1e6/d.Seconds()), "", nil)
	b.add("import of that file: peak RSS", fmt.Sprintf("%d MB", rss>>20), "< 256 MB", ptr(rss < 256<<20))
	return nil
}

// bigMessage: memctl import of one JSONL line holding a single 20 MB message, three kinds of
// it, each against the floor: the peak resident memory of importing one short message (into a
// new database, as each of the large ones is). The target is the floor plus 5 times the
// message (its JSON line). Prose is the text of the corpus, repeated (escapes: quotes,
// newlines); base64 is random bytes encoded; the unbroken word is random lowercase letters, one
// piece for the tokenizer from end to end.
func (b *bench) bigMessage(corpus []conversation) error {
	const target = "< floor + 5 x the message"
	if b.memctl == "" {
		b.add("import of one 20 MB message: peak RSS", "not run (needs -memctl)", target, nil)
		return nil
	}
	want := 20 << 20
	if b.quick {
		want = 2 << 20
	}
	floor, _, err := b.importPeak("short", chat.TextMessage(chat.RoleUser, "a short message: what is the status of order W000123?"))
	if err != nil {
		return err
	}
	b.add("import of one short message: peak RSS (the floor)", fmt.Sprintf("%d MB", floor>>20), "", nil)
	rng := rand.New(rand.NewPCG(36, 20))
	kinds := []struct {
		name string
		text func() string
	}{
		{"prose", func() string {
			var text strings.Builder
			for text.Len() < want {
				for _, c := range corpus {
					for _, m := range c.msgs {
						text.WriteString(m.Text())
						text.WriteByte('\n')
					}
				}
			}
			return text.String()[:want]
		}},
		{"base64", func() string {
			raw := make([]byte, want/4*3)
			for i := range raw {
				raw[i] = byte(rng.Uint32())
			}
			return base64.StdEncoding.EncodeToString(raw)
		}},
		{"one unbroken word", func() string {
			word := make([]byte, want)
			for i := range word {
				word[i] = 'a' + byte(rng.IntN(26))
			}
			return string(word)
		}},
	}
	for _, k := range kinds {
		rss, size, err := b.importPeak(strings.ReplaceAll(k.name, " ", "-"), chat.TextMessage(chat.RoleUser, k.text()))
		if err != nil {
			return err
		}
		limit := floor + int64(5*size)
		over := rss - floor
		b.add(fmt.Sprintf("import of one %d MB message, %s: peak RSS", size>>20, k.name),
			fmt.Sprintf("%d MB: floor + %d MB (%.1f x the message); bound %d MB", rss>>20, over>>20, float64(over)/float64(size), limit>>20), target, ptr(rss < limit))
	}
	return nil
}

// importPeak writes m as a one-line JSONL file and imports it with memctl into a new database:
// the process's peak resident memory and the size of the line.
func (b *bench) importPeak(name string, m chat.Message) (int64, int, error) {
	line, err := json.Marshal(m)
	if err != nil {
		return 0, 0, err
	}
	path := filepath.Join(b.dir, "message-"+name+".jsonl")
	if err := os.WriteFile(path, append(line, '\n'), 0o600); err != nil {
		return 0, 0, err
	}
	size := len(line)
	line, m = nil, chat.Message{}
	runtime.GC()
	rss, _, err := peakRSS(exec.Command(b.memctl, "--db", filepath.Join(b.dir, "message-"+name+".db"), "import", "msg", path))
	os.Remove(path)
	return rss, size, err
}

// peakRSS runs cmd and returns its peak resident memory, read from /proc while it runs (the
// rusage of a child started by this large process would count this process's memory, which the
// child shares until its exec), and how long it ran.
func peakRSS(cmd *exec.Cmd) (int64, time.Duration, error) {
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	done, peak := make(chan struct{}), make(chan int64)
	go func() {
		rss := int64(0)
		for {
			rss = max(rss, hwm(cmd.Process.Pid))
			select {
			case <-done:
				peak <- rss
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	d := time.Since(start)
	close(done)
	rss := <-peak
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	return rss, d, nil
}

// hwm is the peak resident memory (VmHWM) of a running process, in bytes; 0 when unknown.
func hwm(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// threads: memctl threads on a database of 1,000 threads, whole process; then the listing of
// 100,000 threads on each backend (manyThreads).
func (b *bench) threads(corpus []conversation) error {
	if b.memctl == "" {
		b.add("memctl threads, 1,000 threads", "not run (needs -memctl)", "< 50 ms", nil)
		return b.manyThreads(corpus)
	}
	ctx := context.Background()
	path := filepath.Join(b.dir, "threads.db")
	s, err := openStore(path)
	if err != nil {
		return err
	}
	for i := range 1000 {
		if _, err := s.Append(ctx, fmt.Sprintf("thread-%04d", i), shortMessages(20, i), memory.AppendOptions{}); err != nil {
			return err
		}
	}
	s.Close()
	var ds []time.Duration
	for range 7 {
		cmd := exec.Command(b.memctl, "--db", path, "threads", "--json")
		cmd.Dir = b.dir
		d, out, err := timeProcess(cmd)
		if err != nil {
			return err
		}
		var rows []json.RawMessage
		if json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1000 {
			return fmt.Errorf("memctl threads listed %d threads, want 1000", len(rows))
		}
		ds = append(ds, d)
	}
	d := median(ds)
	b.add("memctl threads, 1,000 threads (whole process)", d.Round(100*time.Microsecond).String(), "< 50 ms", ptr(d < 50*time.Millisecond))
	return b.manyThreads(corpus)
}
