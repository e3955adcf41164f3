package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"

	_ "modernc.org/sqlite"
)

// tree lists every file under root with its mode and content hash.
func tree(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		line := fmt.Sprintf("%s %v", path, info.Mode())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// runArgs runs memctl with exactly args (no --db or --config added).
func runArgs(stdin io.Reader, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// TestPerUserPaths: with a fresh HOME and nothing set, reading commands exit 1 "no database"
// and create nothing anywhere; import writes the database, 0600 in a 0700 directory, under
// $XDG_DATA_HOME/memctl (~/.local/share/memctl when unset) and nothing in the working directory,
// where a memctl.yaml is never read.
func TestPerUserPaths(t *testing.T) {
	for _, xdg := range []bool{true, false} {
		t.Run(fmt.Sprintf("xdg=%v", xdg), func(t *testing.T) {
			root := t.TempDir()
			home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
			os.Mkdir(home, 0o700)
			os.Mkdir(work, 0o700)
			t.Setenv("HOME", home)
			t.Setenv("MEMCTL_DB", "")
			t.Setenv("MEMCTL_CONFIG", "")
			dataHome := filepath.Join(home, ".local", "share")
			t.Setenv("XDG_DATA_HOME", "")
			t.Setenv("XDG_CONFIG_HOME", "")
			if xdg {
				dataHome = filepath.Join(root, "data")
				t.Setenv("XDG_DATA_HOME", dataHome)
				t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
			}
			t.Chdir(work)
			// A config in the working directory that would fail if it were read.
			os.WriteFile(filepath.Join(work, "memctl.yaml"), []byte("nonsense_key: 1\n"), 0o600)
			os.WriteFile(filepath.Join(work, "config.yaml"), []byte("nonsense_key: 1\n"), 0o600)
			before := tree(t, root)
			dbPath := filepath.Join(dataHome, "memctl", "memctl.db")
			for _, args := range [][]string{{"threads"}, {"show", "t1"}, {"export", "t1"}, {"search", "x"}, {"reports"},
				{"report", "1"}, {"providers"}, {"attempts"}, {"compact", "t1", "--dry-run"}, {"compact", "t1"},
				{"revert", "1"}, {"delete", "t1", "--yes"}} {
				code, _, errs := runArgs(strings.NewReader(""), args...)
				if code != 1 || errs != "memctl: no database at "+dbPath+"\n" {
					t.Errorf("%v: exit %d, %q; want 1 and no database at %s", args, code, errs, dbPath)
				}
			}
			if after := tree(t, root); after != before {
				t.Fatalf("commands that found no database changed the file system:\n%s\nwas\n%s", after, before)
			}
			code, out, errs := runArgs(strings.NewReader(""), "config")
			if code != 0 || !strings.Contains(out, "# database: "+dbPath+" (from the user data directory; does not exist yet") ||
				!strings.Contains(out, "# config: built-in default") {
				t.Fatalf("config: exit %d %q %q", code, out, errs)
			}
			code, _, errs = runArgs(strings.NewReader(""), "import", "t1", conversationFiles(t)[0])
			if code != 0 {
				t.Fatalf("import: exit %d %s", code, errs)
			}
			if entries, _ := os.ReadDir(work); len(entries) != 2 {
				t.Fatalf("import wrote in the working directory: %v", entries)
			}
			st, err := os.Stat(dbPath)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("database %s: %v %v, want mode 0600", dbPath, st, err)
			}
			for dir := filepath.Dir(dbPath); dir != filepath.Dir(dataHome); dir = filepath.Dir(dir) {
				if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
					t.Fatalf("directory %s: %v, want mode 0700", dir, st.Mode())
				}
			}
			if code, out, _ := runArgs(strings.NewReader(""), "threads", "--json"); code != 0 || !strings.Contains(out, `"id": "t1"`) {
				t.Fatalf("threads after import: exit %d %q", code, out)
			}
			// The user config file is used when it exists, and config says so.
			cfgDir := filepath.Join(home, ".config", "memctl")
			if xdg {
				cfgDir = filepath.Join(root, "config", "memctl")
			}
			os.MkdirAll(cfgDir, 0o700)
			os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("model: gpt-4.1\n"), 0o600)
			var cfg map[string]any
			_, out, _ = runArgs(strings.NewReader(""), "config", "--json")
			json.Unmarshal([]byte(out), &cfg)
			if cfg["model"] != "gpt-4.1" || cfg["config_file"] != filepath.Join(cfgDir, "config.yaml") || cfg["database"] != dbPath {
				t.Fatalf("config --json with a user file: %v", cfg)
			}
		})
	}
}

// TestReadCommandsNeverCreate: with --db or $MEMCTL_DB naming a missing file, no command that
// only reads creates it.
func TestReadCommandsNeverCreate(t *testing.T) {
	m := newMemctl(t)
	before := tree(t, m.dir)
	for _, args := range [][]string{{"threads"}, {"reports"}, {"attempts"}, {"providers"}, {"search", "a"}, {"show", "x"}, {"export", "x"}, {"report", "3"}} {
		if code, _, errs := m.run(args...); code != 1 || !strings.Contains(errs, "no database at "+m.db) {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
		t.Setenv("MEMCTL_DB", m.db)
		if code, _, errs := runArgs(strings.NewReader(""), args...); code != 1 || !strings.Contains(errs, "no database at "+m.db) {
			t.Errorf("$MEMCTL_DB %v: exit %d %q", args, code, errs)
		}
		t.Setenv("MEMCTL_DB", "")
	}
	if after := tree(t, m.dir); after != before {
		t.Fatalf("a reading command created files:\n%s", after)
	}
}

// TestForeignDatabaseUntouched: another application's SQLite file named by --db is refused by
// every command, exit 1, saying what it looks like, and stays byte-identical with nothing beside it.
func TestForeignDatabaseUntouched(t *testing.T) {
	m := newMemctl(t)
	sqldb, err := sql.Open("sqlite", "file:"+url.PathEscape(m.db))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"CREATE TABLE contacts (name TEXT)", "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('keep me')"} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	sqldb.Close()
	before := tree(t, m.dir)
	for _, args := range [][]string{{"threads"}, {"import", "t1", conversationFiles(t)[0]}, {"compact", "t1"}, {"delete", "t1", "--yes"}, {"search", "keep"}} {
		code, _, errs := m.run(args...)
		if code != 1 || !strings.Contains(errs, "an SQLite database with tables contacts, notes") || !strings.Contains(errs, "not a memcascade database") {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
	if after := tree(t, m.dir); after != before {
		t.Fatalf("the foreign file or its directory changed:\n%s\nwas\n%s", after, before)
	}
}

// TestImpossibleValuesExit2: zero, negative, NaN and infinite numbers, unknown commands, empty
// thread ids, a directory as FILE and a request with no messages are usage errors naming the
// flag or the problem; none of them touches the database.
func TestImpossibleValuesExit2(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	before := m.must("export", "t1", "--all")
	dir := t.TempDir()
	noMessages := filepath.Join(dir, "foo.json")
	os.WriteFile(noMessages, []byte(`{"foo":[1]}`), 0o600)
	emptyMessages := filepath.Join(dir, "empty.json")
	os.WriteFile(emptyMessages, []byte(`{"messages":[]}`), 0o600)
	for _, tc := range []struct {
		args []string
		say  string
	}{
		{[]string{"compact", "t1", "--limit", "0"}, "--limit 0"},
		{[]string{"compact", "t1", "--limit", "-5"}, "--limit -5"},
		{[]string{"compact", "t1", "--ratio", "0", "--force"}, "--ratio 0"},
		{[]string{"compact", "t1", "--ratio", "-0.2", "--force"}, "--ratio -0.2"},
		{[]string{"compact", "t1", "--ratio", "NaN", "--force"}, "--ratio NaN"},
		{[]string{"compact", "t1", "--ratio", "Inf", "--force"}, "--ratio +Inf"},
		{[]string{"compact", "t1", "--ratio", "1.5", "--force"}, "--ratio 1.5"},
		{[]string{"compact", "t1", "--trigger", "0"}, "--trigger 0"},
		{[]string{"compact", "t1", "--trigger", "NaN"}, "--trigger NaN"},
		{[]string{"compact", "t1", "--trigger", "-Inf"}, "--trigger -Inf"},
		{[]string{"search", "a", "--limit", "0"}, "--limit 0"},
		{[]string{"attempts", "--limit", "-1"}, "--limit -1"},
		{[]string{"reports", "--limit", "0"}, "--limit 0"},
		{[]string{"threadz"}, `unknown command "threadz"`},
		{[]string{"bogus", "t1"}, `unknown command "bogus"`},
		{[]string{"import", "", conversationFiles(t)[0]}, "empty thread id"},
		{[]string{"export", ""}, "empty thread id"},
		{[]string{"show", ""}, "empty thread id"},
		{[]string{"delete", "", "--yes"}, "empty thread id"},
		{[]string{"compact", ""}, "empty thread id"},
		{[]string{"reports", ""}, "empty thread id"},
		{[]string{"search", "a", "--thread", ""}, "--thread: empty thread id"},
		{[]string{"show", "a\x00b"}, "contains a NUL character"},
		{[]string{"export", "bad\xffutf8"}, "is not valid UTF-8"},
		{[]string{"import", "t1", dir}, dir + " is a directory"},
		{[]string{"tokens", "--model", "gpt-4o", dir}, dir + " is a directory"},
		{[]string{"tokens", "--model", "gpt-4o", noMessages}, "message 0: role: missing"},
		{[]string{"tokens", "--model", "gpt-4o", emptyMessages}, "holds no message"},
	} {
		code, out, errs := m.run(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.say) || out != "" {
			t.Errorf("memctl %q: exit %d, stdout %q, stderr %q; want 2 saying %q", tc.args, code, out, errs, tc.say)
		}
	}
	if after := m.must("export", "t1", "--all"); after != before {
		t.Fatal("a refused command changed the thread")
	}
	var reports []any
	json.Unmarshal([]byte(m.must("reports", "--json")), &reports)
	if len(reports) != 0 {
		t.Fatalf("a refused compaction was recorded: %v", reports)
	}
}

// TestDeleteFromDevNull: with standard input from /dev/null (cron, systemd), delete without
// --yes asks for nothing: exit 2 naming --yes, and the thread stays.
func TestDeleteFromDevNull(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	code, out, errs := runArgs(null, "--db", m.db, "delete", "t1")
	if code != 2 || !strings.Contains(errs, "--yes") || strings.Contains(errs, "[y/N]") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2 naming --yes without a prompt", code, out, errs)
	}
	m.must("export", "t1")
}

// hostile holds what must never reach a terminal raw: CSI, OSC with BEL, a lone ESC, backspace,
// carriage return, DEL, a C1 CSI and a bidirectional override.
const hostile = "A\x1b[2J\x1b]0;pwned\x07B\bC\rD\x7fE\u009b31mF\u202eG"

// rawControls returns the control characters in s other than newline and tab.
func rawControls(s string) []rune {
	var found []rune
	for _, r := range s {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
			found = append(found, r)
		}
	}
	return found
}

// TestHumanOutputNeutralisesControls: stored text with escape sequences in message content,
// names, tool call ids, thread ids and summaries is printed with visible escapes by every human
// printer, while JSON output keeps it exact.
func TestHumanOutputNeutralisesControls(t *testing.T) {
	m := newMemctl(t)
	thread := "t\x1b[31m1"
	content, _ := json.Marshal("tab\there\nline two " + hostile)
	name, _ := json.Marshal("n" + hostile)
	id, _ := json.Marshal("call" + hostile)
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"be brief"}`)
	for i := range 40 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","name":%s,"content":%s}`, name, content))
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%s,"type":"function","function":{"name":"lookup","arguments":"{\"q\":%d}"}}]}`, id, i))
		msgs = append(msgs, fmt.Sprintf(`{"role":"tool","tool_call_id":%s,"content":%s}`, id, content))
	}
	file := filepath.Join(m.dir, "hostile.jsonl")
	os.WriteFile(file, []byte(strings.Join(msgs, "\n")), 0o600)
	m.must("import", thread, file)
	m.must("compact", thread, "--force")
	for _, args := range [][]string{{"show", thread}, {"show", thread, "--all"}, {"threads"}, {"search", "pwned"},
		{"reports"}, {"report", "1"}, {"attempts"}, {"providers"}, {"import", thread, file, "--again"}, {"compact", thread, "--force"}} {
		code, out, errs := m.run(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d %s", args, code, errs)
		}
		if bad := rawControls(out + errs); len(bad) > 0 {
			t.Errorf("%q printed raw control characters %q", args, bad)
		}
	}
	out := m.must("show", thread, "--all")
	for _, want := range []string{`\x1b[2J`, `\x1b]0;pwned\x07B\x08C\x0dD\x7fE\u009b31mF\u202eG`, "tab\there", "\n  line two", `t\x1b[31m1`} {
		if !strings.Contains(out, want) {
			t.Errorf("show --all does not show %q", want)
		}
	}
	// An error naming stored text is escaped too.
	code, _, errs := m.run("export", "no\x1b[2Jsuch")
	if code != 1 || len(rawControls(errs)) > 0 {
		t.Errorf("error line: exit %d %q", code, errs)
	}
	// JSON keeps the text exact.
	var exported []map[string]any
	json.Unmarshal([]byte(m.must("export", thread, "--all")), &exported)
	var want string
	json.Unmarshal(content, &want)
	if len(exported) != len(msgs)*2 || exported[1]["content"] != want {
		t.Fatalf("export --all lost the exact text: %d messages", len(exported))
	}
	var threads []map[string]any
	json.Unmarshal([]byte(m.must("threads", "--json")), &threads)
	if len(threads) != 1 || threads[0]["id"] != thread {
		t.Fatalf("threads --json: %v", threads)
	}
}

// TestTermWriterSplitRunes: a control character whose UTF-8 bytes arrive in separate writes is
// still escaped.
func TestTermWriterSplitRunes(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &termWriter{w: &buf}
	s := "x\u009by\u202ez\xff"
	for i := range len(s) {
		w.Write([]byte{s[i]})
	}
	w.Flush()
	if got := buf.String(); got != `x\u009by\u202ez\xff` {
		t.Fatalf("got %q", got)
	}
}
