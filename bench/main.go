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
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
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
	memctl := flag.String("memctl", "", "a built memctl binary (for the process-level rows)")
	js := flag.String("js", "", "a directory with node_modules/tiktoken installed (for the comparison row)")
	scale := flag.Int("scale", 150, "copies of the testdata conversations in the append corpus")
	quick := flag.Bool("quick", false, "smaller sizes, for a fast check that the bench runs")
	only := flag.String("only", "", "run only these steps, comma-separated: append, writers, active, compact, windows, tokens, import, message, threads, serve")
	postgres := flag.String("postgres", os.Getenv(postgresEnv), "a PostgreSQL server URL for the PostgreSQL rows (default $"+postgresEnv+"; none: SQLite only)")
	windowMaxOutput := flag.Int("window-max-output", 1024, "max_output_tokens of the summarizer in the windows step")
	flag.Parse()
	b := &bench{memctl: *memctl, js: *js, scale: *scale, quick: *quick, only: *only, windowMaxOutput: *windowMaxOutput, postgres: *postgres}
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
	}{{"append", b.append}, {"writers", b.writers}, {"active", b.activeRead}, {"compact", b.compaction}, {"windows", b.windowRows}, {"tokens", b.tokenizer}, {"import", b.bigImport}, {"message", b.bigMessage}, {"threads", b.threads}, {"serve", b.serveRows}}
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
	msgs  []memory.Message
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
				var m memory.Message
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
// on the same messages and a raw insert of the same rows.
func (b *bench) append(corpus []conversation) error {
	ctx := context.Background()
	nmsgs, size := corpusBytes(corpus)
	counter, err := memory.NewTokenCounter(memory.EncodingO200k)
	if err != nil {
		return err
	}
	counter.CountText("warm up") // load the encoding outside the timings

	start := time.Now()
	tokens := make([]int, 0, nmsgs)
	for _, c := range corpus {
		for _, m := range c.msgs {
			tokens = append(tokens, counter.CountMessage(m))
		}
	}
	tCount := time.Since(start)

	s, err := openStore(filepath.Join(b.dir, "append.db"))
	if err != nil {
		return err
	}
	defer s.Close()
	start = time.Now()
	for i, c := range corpus {
		r := bytes.NewReader(bytes.Join(c.lines, []byte("\n")))
		if _, err := s.Import(ctx, fmt.Sprintf("c%d", i), r, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			return err
		}
	}
	tImport := time.Since(start)

	raw, err := db.Open(ctx, filepath.Join(b.dir, "raw.db"))
	if err != nil {
		return err
	}
	defer raw.Close()
	rawQ, err := db.Prepare(ctx, raw)
	if err != nil {
		return err
	}
	defer rawQ.Close()
	start = time.Now()
	k := 0
	for i, c := range corpus {
		err := db.WithTx(ctx, raw, func(tx *sql.Tx) error {
			q := rawQ.WithTx(tx)
			thread := fmt.Sprintf("c%d", i)
			if _, err := q.InsertThread(ctx, db.InsertThreadParams{ID: thread, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}"}); err != nil {
				return err
			}
			for j, m := range c.msgs {
				err := q.InsertMessage(ctx, db.InsertMessageParams{ThreadID: thread, Seq: int64(j + 1), Role: m.Role,
					Content: sql.NullString{String: m.Text(), Valid: true}, Raw: string(c.lines[j]), Tokens: int64(tokens[k+j])})
				if err != nil {
					return err
				}
			}
			return q.IndexMessages(ctx, db.IndexMessagesParams{ThreadID: thread, FromSeq: 1, ToSeq: int64(len(c.msgs))})
		})
		if err != nil {
			return err
		}
		k += len(c.msgs)
	}
	tRaw := time.Since(start)

	mb := float64(size) / 1e6
	b.add(fmt.Sprintf("append: import of %d messages (%.1f MB), counted and indexed", nmsgs, mb),
		fmt.Sprintf("%.0f msg/s, %.1f MB/s", float64(nmsgs)/tImport.Seconds(), mb/tImport.Seconds()), "", nil)
	b.add("append: token counting alone, same messages", fmt.Sprintf("%.0f msg/s, %.1f MB/s", float64(nmsgs)/tCount.Seconds(), mb/tCount.Seconds()), "", nil)
	b.add("append: raw SQLite insert of the same rows (with the FTS index)", fmt.Sprintf("%.0f msg/s, %.1f MB/s", float64(nmsgs)/tRaw.Seconds(), mb/tRaw.Seconds()), "", nil)
	ratio := tImport.Seconds() / tCount.Seconds()
	b.add("append: import time / counting time", fmt.Sprintf("%.2f", ratio), "<= 2", ptr(ratio <= 2))
	return nil
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

func shortMessages(n int, from int) []memory.Message {
	out := make([]memory.Message, 0, n)
	for i := range n {
		role := memory.RoleUser
		if i%2 == 1 {
			role = memory.RoleAssistant
		}
		out = append(out, memory.TextMessage(role, fmt.Sprintf("message %d about order W%06d and flight HAT%03d", from+i, from+i, (from+i)%300)))
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
	sys := memory.TextMessage(memory.RoleSystem, "You are a support agent.")
	if _, err := s.Append(ctx, "long", []memory.Message{sys}, memory.AppendOptions{}); err != nil {
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
	c := memory.NewCompactor(s, zeroLatency{}, memory.Settings{TokenLimit: 2 * keep, TargetRatio: 0.5, TriggerRatio: 0.8,
		SummaryMaxTokens: keep / 2, TotalTimeout: time.Hour})
	if _, err := c.Compact(ctx, "long", memory.CompactOptions{Force: true}); err != nil {
		return err
	}
	la, _ := s.Active(ctx, "long")
	// "short" has as many messages as the active context of "long", and no history beyond.
	short := append([]memory.Message{sys}, shortMessages(len(la.Entries)-1, archived)...)
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
	var ds []time.Duration
	for i := range 5 {
		thread := fmt.Sprintf("t%d-%d", n, i)
		msgs := append([]memory.Message{memory.TextMessage(memory.RoleSystem, "You are a support agent.")}, shortMessages(n, 0)...)
		if _, err := s.Append(ctx, thread, msgs, memory.AppendOptions{}); err != nil {
			return err
		}
		a, _ := s.Active(ctx, thread)
		c := memory.NewCompactor(s, zeroLatency{}, memory.Settings{TokenLimit: a.Tokens / 2, SummaryMaxTokens: 2048})
		start := time.Now()
		rep, err := c.Compact(ctx, thread, memory.CompactOptions{Force: true})
		if err != nil {
			return err
		}
		ds = append(ds, time.Since(start))
		if rep.Status != memory.StatusApplied {
			return fmt.Errorf("compaction of %d messages: %s", n, rep.Status)
		}
	}
	d := median(ds)
	var ok *bool
	target := ""
	if n == 10_000 {
		target, ok = "< 50 ms", ptr(d < 50*time.Millisecond)
	}
	label := fmt.Sprintf("compaction overhead, %d active messages (plan, render, commit, recount)", n)
	if backend != sqliteBackend {
		label += ", " + backend
	}
	b.add(label, d.Round(100*time.Microsecond).String(), target, ok)
	return nil
}

// tokenizer: counting throughput, exactness, and OpenAI's JavaScript tokenizer on the same
// text, whole process against whole process.
func (b *bench) tokenizer(corpus []conversation) error {
	c, err := memory.NewTokenCounter(memory.EncodingO200k)
	if err != nil {
		return err
	}
	vectors := map[string][]int{memory.EncodingCL100k: {15339, 1917}, memory.EncodingO200k: {24912, 2375}}
	exact := true
	for enc, want := range vectors {
		tc, _ := memory.NewTokenCounter(enc)
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

func argsOf(m memory.Message) []string {
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
	c, err := memory.NewTokenCounter(memory.EncodingO200k)
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

// bigMessage: memctl import of one JSONL line holding a single 50 MB message, its peak resident
// memory against the size of that message.
func (b *bench) bigMessage(corpus []conversation) error {
	if b.memctl == "" {
		b.add("import of one 50 MB message: peak RSS", "not run (needs -memctl)", "< 4x the message + 64 MB", nil)
		return nil
	}
	want := 50 << 20
	if b.quick {
		want = 5 << 20
	}
	// The text of the corpus, repeated: ordinary prose and tool output, escaped as JSON.
	var text bytes.Buffer
	for text.Len() < want {
		for _, c := range corpus {
			for _, m := range c.msgs {
				text.WriteString(m.Text())
				text.WriteByte('\n')
			}
			if text.Len() >= want {
				break
			}
		}
	}
	line, err := json.Marshal(memory.TextMessage(memory.RoleUser, string(text.Bytes()[:want])))
	if err != nil {
		return err
	}
	path := filepath.Join(b.dir, "message.jsonl")
	if err := os.WriteFile(path, append(line, '\n'), 0o600); err != nil {
		return err
	}
	size := len(line)
	line, text = nil, bytes.Buffer{}
	runtime.GC()
	rss, d, err := peakRSS(exec.Command(b.memctl, "--db", filepath.Join(b.dir, "message.db"), "import", "msg", path))
	if err != nil {
		return err
	}
	limit := int64(4*size + 64<<20)
	b.add(fmt.Sprintf("import of one %d MB message: peak RSS", size>>20), fmt.Sprintf("%d MB (%.1fx the message), %s", rss>>20, float64(rss)/float64(size), d.Round(100*time.Millisecond)), "< 4x the message + 64 MB", ptr(rss < limit))
	return nil
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
