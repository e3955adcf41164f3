//go:build heavy && unix

package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memcascade/memcascade/memory"
)

// Sizes of the crash harness's data.
const (
	importBytes  = 5 << 20   // the file each killed import appends
	compactBytes = 1 << 20   // the history compacted before the killed compaction
	compactMore  = 300 << 10 // appended after that first compaction
	compactLimit = "8000"    // --limit of the killed compaction: one pass, a large middle
	seedLimit    = "6000"    // --limit of the compaction that prepares the import's thread
	tinyMessage  = `{"role":"user","content":"written after the crash"}` + "\n"
)

// scenario is one kind of killed command: it runs on a copy of base, and after the kill the
// database must be in the state before or the state after a complete run.
type scenario struct {
	name   string
	thread string
	base   string   // the database it starts from (closed, checkpointed)
	args   []string // memctl's arguments
	// runtime is how long a complete run took (the shorter of two): kills land at a random
	// moment up to it.
	runtime time.Duration
	// memctl export --all and memctl export before and after a complete run.
	allBefore, allAfter, activeBefore, activeAfter []byte
	countBefore, countAfter                        int // messages in the thread
	baseReports                                    int // reports in base
	maxID                                          int64
}

func TestCrash(t *testing.T) {
	runs := envInt(t, "MEMCASCADE_CRASH_RUNS", 100)
	seed := time.Now().UnixNano()
	if v := os.Getenv("MEMCASCADE_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("MEMCASCADE_CRASH_SEED=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d656d63))
	dir := t.TempDir()
	setup := time.Now()
	scenarios := []*scenario{prepareImport(t, dir), prepareCompact(t, dir)}
	t.Logf("setup took %s; seed %d (MEMCASCADE_CRASH_SEED to replay)", time.Since(setup).Round(time.Millisecond), seed)
	for _, sc := range scenarios {
		t.Logf("%s: a complete run takes %s (%d -> %d messages)", sc.name, sc.runtime.Round(time.Millisecond), sc.countBefore, sc.countAfter)
	}
	tiny := filepath.Join(dir, "tiny.jsonl")
	if err := os.WriteFile(tiny, []byte(tinyMessage), 0o600); err != nil {
		t.Fatal(err)
	}

	counts := map[string]int{}
	db := filepath.Join(dir, "crash.db")
	for i := range runs {
		sc := scenarios[i%len(scenarios)]
		copyDB(t, sc.base, db)
		// Kills land uniformly over the run; every fifth aims at its end (0.9 to 1.1 times
		// the runtime), where the commit and the final writes are, windows too short for a
		// uniform delay to hit often.
		delay := time.Duration(rng.Int64N(int64(sc.runtime) + 1))
		if i%5 == 4 {
			delay = sc.runtime*9/10 + time.Duration(rng.Int64N(int64(sc.runtime)/5+1))
		}
		k := killAfter(t, db, sc.args, delay)
		where := sc.check(t, db, k)
		counts[sc.name+": "+where]++
		t.Logf("run %3d %-7s kill after %6s: %s", i+1, sc.name, delay.Round(time.Millisecond), where)

		// The database stays writable after the crash.
		var res struct{ Messages int }
		if err := json.Unmarshal(mustMemctl(t, db, "--json", "import", sc.thread, tiny).stdout, &res); err != nil {
			t.Fatal(err)
		}
		want := sc.countBefore + 1
		if strings.HasSuffix(where, "(after)") {
			want = sc.countAfter + 1
		}
		if res.Messages != want {
			t.Fatalf("run %d: %d messages after one more import, want %d", i+1, res.Messages, want)
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("%d kills, where they landed:", runs)
	for _, k := range keys {
		t.Logf("  %4d  %s", counts[k], k)
	}
}

// killed is what happened to a killed command.
type killed struct {
	exited   bool // it had finished (exit 0) before the kill
	lockHeld bool // it held SQLite's write lock when killed
	stderr   string
}

// killAfter runs memctl args on db and kills it with SIGKILL after delay, unless it finished.
func killAfter(t *testing.T, db string, args []string, delay time.Duration) killed {
	t.Helper()
	cmd := memctlCmd(db, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var k killed
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("memctl %s failed on its own: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		k.exited = true
	case <-time.After(delay):
		k.lockHeld = holdsWriteLock(cmd.Process.Pid, db+"-shm")
		cmd.Process.Kill() // an error means it just ended: the wait below tells
		err := <-done
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case err == nil:
			k.exited = true
		case !ws.Signaled():
			t.Fatalf("memctl %s failed on its own: %v: %s", strings.Join(args, " "), err, errb.String())
		}
	}
	k.stderr = errb.String()
	return k
}

// holdsWriteLock reports whether process pid holds the WAL write lock of the database whose
// shared-memory file is shm: SQLite's unix VFS takes it as a POSIX lock on byte 120 of that
// file, which /proc/locks lists (Linux). It is false where /proc/locks cannot be read.
func holdsWriteLock(pid int, shm string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(shm, &st); err != nil {
		return false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	inode := ":" + fmt.Sprint(st.Ino)
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		// "1: POSIX  ADVISORY  WRITE 30611 fe:00:9986146 120 120"; waiters have "->" after "1:".
		if len(f) == 8 && f[1] == "POSIX" && f[3] == "WRITE" && f[4] == strconv.Itoa(pid) &&
			strings.HasSuffix(f[5], inode) && f[6] == "120" {
			return true
		}
	}
	return false
}

// check verifies db after a kill and says where the kill landed; the text ends with
// "(before)" or "(after)": the state the thread is in.
func (sc *scenario) check(t *testing.T, db string, k killed) string {
	t.Helper()
	// memctl's open after the crash marks the killed compaction interrupted.
	reps := reports(t, db)
	for _, r := range reps {
		if r.Status == memory.StatusRunning {
			t.Fatalf("%s: compaction %d is still running after the next open", sc.name, *r.ID)
		}
	}
	var fresh []memory.Report
	for _, r := range reps {
		if *r.ID > sc.maxID {
			fresh = append(fresh, r)
		}
	}
	if len(reps)-len(fresh) != sc.baseReports {
		t.Fatalf("%s: %d earlier reports, want %d", sc.name, len(reps)-len(fresh), sc.baseReports)
	}
	all := mustMemctl(t, db, "export", sc.thread, "--all").stdout
	active := mustMemctl(t, db, "export", sc.thread).stdout
	allAfter := bytes.Equal(all, sc.allAfter)
	if !allAfter && !bytes.Equal(all, sc.allBefore) {
		t.Fatalf("%s: export --all is neither the history before nor the one after: %s", sc.name, diffMessages(all, sc.allBefore, sc.allAfter))
	}
	activeAfter := bytes.Equal(active, sc.activeAfter)
	if !activeAfter && !bytes.Equal(active, sc.activeBefore) {
		t.Fatalf("%s: the active context is neither the one before nor the one after: %s", sc.name, diffMessages(active, sc.activeBefore, sc.activeAfter))
	}
	checkDatabase(t, db)

	state := "(before)"
	if activeAfter {
		state = "(after)"
	}
	if sc.name == "import" {
		if allAfter != activeAfter {
			t.Fatalf("import: history after=%v but active context after=%v", allAfter, activeAfter)
		}
		if len(fresh) != 0 {
			t.Fatalf("import: %d new compaction reports", len(fresh))
		}
		switch {
		case k.exited:
			return "finished before the kill " + state
		case k.lockHeld:
			return "killed inside a write transaction " + state
		case activeAfter:
			return "killed after the commit, before exit " + state
		}
		return "killed before its write transaction " + state
	}

	// compaction: the history never changes; the report says how far it got.
	if allAfter {
		t.Fatalf("compact: export --all changed")
	}
	lock := ""
	if k.lockHeld {
		lock = ", in a write transaction"
	}
	if len(fresh) > 1 {
		t.Fatalf("compact: %d new reports, want at most 1", len(fresh))
	}
	if len(fresh) == 0 {
		if activeAfter {
			t.Fatalf("compact: the active context changed without a report")
		}
		return "killed before the compaction was recorded" + lock + " " + state
	}
	r := fresh[0]
	switch {
	case r.Status == memory.StatusFailed && r.Error == "interrupted":
		if activeAfter {
			t.Fatalf("compact: interrupted, yet the active context is the one after")
		}
		return "killed mid-compaction (recorded running, marked interrupted)" + lock + " " + state
	case r.Status == memory.StatusApplied:
		if !activeAfter {
			t.Fatalf("compact: applied, yet the active context is the one before")
		}
		switch {
		case k.exited:
			return "finished before the kill " + state
		case r.DurationMs == 0:
			return "killed after the summary was applied, before the final figures" + lock + " " + state
		}
		return "killed after the compaction finished, before exit" + lock + " " + state
	}
	t.Fatalf("compact: the killed compaction reads %s (%q), want failed (interrupted) or applied", r.Status, r.Error)
	return ""
}

// diffMessages describes how export output got differs from two candidates.
func diffMessages(got, a, b []byte) string {
	var g, x, y []json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("output is not a JSON array (%v): %.200s", err, got)
	}
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	first := func(p, q []json.RawMessage) int {
		for i := range min(len(p), len(q)) {
			if !bytes.Equal(p[i], q[i]) {
				return i
			}
		}
		return min(len(p), len(q))
	}
	return fmt.Sprintf("%d messages (before: %d, after: %d); first difference with before at %d, with after at %d",
		len(g), len(x), len(y), first(g, x), first(g, y))
}

// prepareImport: a thread with one conversation, compacted, into which a ~5 MB file is
// imported.
func prepareImport(t *testing.T, dir string) *scenario {
	t.Helper()
	sc := &scenario{name: "import", thread: "big", base: filepath.Join(dir, "import-base.db")}
	seedFile := filepath.Join(dir, "import-seed.jsonl")
	writeFile(t, seedFile, conversationCopies(t, 1, "seed"))
	mustMemctl(t, sc.base, "import", sc.thread, seedFile)
	if r := compactJSON(t, sc.base, sc.thread, seedLimit); r.Status != memory.StatusApplied {
		t.Fatalf("preparing the import's thread: compaction %s: %s", r.Status, r.Error)
	}
	big := filepath.Join(dir, "import.jsonl")
	data := conversationCopies(t, importBytes, "imp")
	writeFile(t, big, data)
	sc.args = []string{"import", sc.thread, big}
	sc.snapshot(t, sc.base, false)

	// Two complete runs on copies: the "after" state, the same both times, and the runtime.
	for i := range 2 {
		ref := filepath.Join(dir, fmt.Sprintf("import-ref%d.db", i))
		copyDB(t, sc.base, ref)
		d := mustMemctl(t, ref, sc.args...).duration
		if i == 0 {
			sc.runtime = d
			sc.snapshot(t, ref, true)
			continue
		}
		sc.runtime = min(sc.runtime, d)
		if !bytes.Equal(mustMemctl(t, ref, "export", sc.thread, "--all").stdout, sc.allAfter) ||
			!bytes.Equal(mustMemctl(t, ref, "export", sc.thread).stdout, sc.activeAfter) {
			t.Fatal("two complete runs of the same import give different exports")
		}
	}
	// The reference itself: the history after is the history before and the file's messages.
	var before, after []any
	json.Unmarshal(sc.allBefore, &before)
	json.Unmarshal(sc.allAfter, &after)
	var want []any
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(line) > 0 {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
	}
	if len(after) != len(before)+len(want) || !jsonEqual(after[len(before):], want) {
		t.Fatalf("the reference import's history differs from the file (%d + %d messages, got %d)", len(before), len(want), len(after))
	}
	return sc
}

// prepareCompact: a long thread, compacted once, with more messages after that compaction and
// a call still waiting for its result at the end; the killed command compacts it again (the
// new summary folds the old one in).
func prepareCompact(t *testing.T, dir string) *scenario {
	t.Helper()
	sc := &scenario{name: "compact", thread: "long", base: filepath.Join(dir, "compact-base.db")}
	first, more := filepath.Join(dir, "compact-1.jsonl"), filepath.Join(dir, "compact-2.jsonl")
	writeFile(t, first, conversationCopies(t, compactBytes, "c1"))
	pending := `{"role":"assistant","content":null,"tool_calls":[{"id":"pending-1","type":"function","function":{"name":"lookup","arguments":"{}"}}]}` + "\n"
	writeFile(t, more, append(conversationCopies(t, compactMore, "c2"), pending...))
	mustMemctl(t, sc.base, "import", sc.thread, first)
	if r := compactJSON(t, sc.base, sc.thread, compactLimit); r.Status != memory.StatusApplied {
		t.Fatalf("preparing the compaction's thread: compaction %s: %s", r.Status, r.Error)
	}
	mustMemctl(t, sc.base, "import", sc.thread, more)
	sc.args = []string{"compact", sc.thread, "--force", "--limit", compactLimit, "--json"}
	sc.snapshot(t, sc.base, false)

	// Two complete runs on copies: the "after" state, a check that it is deterministic, and the
	// runtime (the shorter: the machine may be busy).
	var runtimes []time.Duration
	for i := range 2 {
		ref := filepath.Join(dir, fmt.Sprintf("compact-ref%d.db", i))
		copyDB(t, sc.base, ref)
		r := mustMemctl(t, ref, sc.args...)
		runtimes = append(runtimes, r.duration)
		var rep memory.Report
		if err := json.Unmarshal(r.stdout, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Status != memory.StatusApplied || rep.Passes != 1 {
			t.Fatalf("reference compaction: %s in %d passes, want applied in 1 (pick another limit)", rep.Status, rep.Passes)
		}
		all, active := mustMemctl(t, ref, "export", sc.thread, "--all").stdout, mustMemctl(t, ref, "export", sc.thread).stdout
		if !bytes.Equal(all, sc.allBefore) {
			t.Fatal("the reference compaction changed the history")
		}
		if i == 0 {
			sc.activeAfter, sc.allAfter = active, nil
		} else if !bytes.Equal(active, sc.activeAfter) {
			t.Fatal("two complete runs of the same compaction give different active contexts: the harness needs a deterministic summary")
		}
	}
	sc.runtime = min(runtimes[0], runtimes[1])
	sc.countAfter = sc.countBefore
	return sc
}

// snapshot records the exports of db as the state before or after.
func (sc *scenario) snapshot(t *testing.T, db string, after bool) {
	t.Helper()
	all := mustMemctl(t, db, "export", sc.thread, "--all").stdout
	active := mustMemctl(t, db, "export", sc.thread).stdout
	var msgs []json.RawMessage
	if err := json.Unmarshal(all, &msgs); err != nil {
		t.Fatal(err)
	}
	if after {
		sc.allAfter, sc.activeAfter, sc.countAfter = all, active, len(msgs)
		return
	}
	sc.allBefore, sc.activeBefore, sc.countBefore = all, active, len(msgs)
	reps := reports(t, db)
	sc.baseReports = len(reps)
	for _, r := range reps {
		sc.maxID = max(sc.maxID, *r.ID)
	}
}

func compactJSON(t *testing.T, db, thread, limit string) memory.Report {
	t.Helper()
	var rep memory.Report
	if err := json.Unmarshal(mustMemctl(t, db, "compact", thread, "--force", "--limit", limit, "--json").stdout, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

var conversationLines = sync.OnceValues(func() ([][]byte, error) {
	files, err := filepath.Glob("../testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no testdata conversations: %v", err)
	}
	slices.Sort(files)
	var lines [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				lines = append(lines, line)
			}
		}
	}
	return lines, nil
})

// conversationCopies returns JSONL of the testdata conversations repeated until it holds at
// least size bytes. Each copy is distinct: its texts end with "[tag copy N]" and its tool-call
// ids with "-tagN".
func conversationCopies(t *testing.T, size int, tag string) []byte {
	t.Helper()
	lines, err := conversationLines()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for n := 0; buf.Len() < size; n++ {
		for _, line := range lines {
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			suffix := fmt.Sprintf("-%s%d", tag, n)
			if s, ok := m["content"].(string); ok {
				m["content"] = fmt.Sprintf("%s [%s copy %d]", s, tag, n)
			}
			if calls, ok := m["tool_calls"].([]any); ok {
				for _, c := range calls {
					if call, ok := c.(map[string]any); ok {
						call["id"] = fmt.Sprint(call["id"]) + suffix
					}
				}
			}
			if id, ok := m["tool_call_id"].(string); ok {
				m["tool_call_id"] = id + suffix
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		if size <= 1 {
			break
		}
	}
	return buf.Bytes()
}
