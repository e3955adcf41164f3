package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
)

// setJSON returns the stored settings `set THREAD --json` prints.
func setJSON(t *testing.T, m *memctl, thread string, args ...string) (stored, effective map[string]any) {
	t.Helper()
	var out struct{ Settings, Effective map[string]any }
	if err := json.Unmarshal([]byte(m.must(append([]string{"set", thread, "--json"}, args...)...)), &out); err != nil {
		t.Fatal(err)
	}
	return out.Settings, out.Effective
}

// TestSetKnobs: the turn and masking knobs are stored on a thread by memctl set (SQLite and
// PostgreSQL), shown by set (text and JSON), cleared one by one with --unset, copied by memctl
// copy, and a bad value is a usage error naming the flag.
func TestSetKnobs(t *testing.T) {
	for _, backend := range []string{testdb.SQLite, testdb.Postgres} {
		t.Run(backend, func(t *testing.T) {
			m := newMemctl(t)
			if backend == testdb.Postgres {
				m.db = testdb.Schema(t, os.Getenv(testdb.Env))
			}
			m.must("import", "t1", testdata(longFile))
			stored, eff := setJSON(t, m, "t1", "--keep-turns", "3", "--compact-every-turns", "5", "--mask-keep-tool-results", "2",
				"--mask-exclude-tools", "read_file,grep", "--mask-clear-tool-inputs", "--mask-clear-thinking")
			want := map[string]any{"keep_turns": 3.0, "compact_every_turns": 5.0, "mask": map[string]any{"keep_tool_results": 2.0,
				"exclude_tools": []any{"read_file", "grep"}, "clear_tool_inputs": true, "clear_thinking": true}}
			if !reflect.DeepEqual(stored, want) {
				t.Fatalf("stored settings %v, want %v", stored, want)
			}
			if !reflect.DeepEqual(eff["mask"], want["mask"]) || eff["keep_turns"] != 3.0 || eff["compact_every_turns"] != 5.0 {
				t.Fatalf("effective settings %v", eff)
			}
			out := m.must("set", "t1")
			for _, row := range []string{"keep_turns              3                  thread", "compact_every_turns     5                  thread",
				"mask.keep_tool_results  2                  thread", "mask.exclude_tools      [read_file, grep]  thread",
				"mask.clear_tool_inputs  true               thread", "mask.clear_thinking     true               thread"} {
				if !strings.Contains(out, row) {
					t.Fatalf("set t1 does not show %q:\n%s", row, out)
				}
			}

			// Copied whole.
			dst := filepath.Join(t.TempDir(), "copy.db")
			m.must("copy", m.db, dst)
			if got, _ := setJSON(t, m.at(dst), "t1"); !reflect.DeepEqual(got, want) {
				t.Fatalf("copy's settings %v, want %v", got, want)
			}

			// --unset clears one knob, --mask-clear-thinking=false stores false.
			stored, eff = setJSON(t, m, "t1", "--unset", "mask.exclude_tools", "--unset", "keep_turns", "--mask-clear-thinking=false")
			wantMask := map[string]any{"keep_tool_results": 2.0, "clear_tool_inputs": true, "clear_thinking": false}
			if stored["keep_turns"] != nil || !reflect.DeepEqual(stored["mask"], wantMask) {
				t.Fatalf("after --unset: %v, want mask %v and no keep_turns", stored, wantMask)
			}
			if eff["keep_turns"] != 0.0 || !reflect.DeepEqual(eff["mask"].(map[string]any)["exclude_tools"], []any{}) {
				t.Fatalf("after --unset, effective %v", eff)
			}

			for _, bad := range []struct{ args []string }{
				{[]string{"--keep-turns", "-1"}}, {[]string{"--compact-every-turns", "-2"}}, {[]string{"--mask-keep-tool-results", "-3"}},
				{[]string{"--mask-exclude-tools", "a b"}}, {[]string{"--unset", "mask.nope"}},
			} {
				code, _, errs := m.run(append([]string{"set", "t1"}, bad.args...)...)
				if code != 2 || !strings.Contains(errs, strings.TrimPrefix(bad.args[0], "")) {
					t.Fatalf("set t1 %v: exit %d, %q; want 2 naming %s", bad.args, code, errs, bad.args[0])
				}
			}
			if got, _ := setJSON(t, m, "t1"); !reflect.DeepEqual(got["mask"], wantMask) {
				t.Fatalf("a refused set changed the settings: %v", got)
			}
		})
	}
}

// TestConfigShowsKnobs: memctl config shows the knobs of the config file, and a bad one is an
// error naming the key and its line.
func TestConfigShowsKnobs(t *testing.T) {
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := "compaction:\n  keep_turns: 4\n  compact_every_turns: 9\n  mask:\n    exclude_tools: [read_file]\n    clear_thinking: true\n"
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out := m.must("config")
	for _, line := range []string{"  keep_turns: 4\n", "  compact_every_turns: 9\n", "    exclude_tools:\n      - read_file\n", "    clear_thinking: true\n"} {
		if !strings.Contains(out, line) {
			t.Fatalf("memctl config does not show %q:\n%s", line, out)
		}
	}
	// The thread's effective settings come from the config when it sets none.
	m.must("import", "t1", testdata(longFile))
	if _, eff := setJSON(t, m, "t1"); eff["keep_turns"] != 4.0 || eff["compact_every_turns"] != 9.0 {
		t.Fatalf("effective settings %v; want the config's keep_turns 4, compact_every_turns 9", eff)
	}
	if err := os.WriteFile(m.config, []byte("compaction:\n  mask:\n    keep_tool_results: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := m.run("config")
	if code != 2 || !strings.Contains(errs, "memctl.yaml:3: compaction.mask.keep_tool_results: -1 must not be negative") {
		t.Fatalf("a negative keep_tool_results: exit %d, %q", code, errs)
	}
}
