package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const longFile = "conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl" // 10,655 tokens

// threadsJSON returns the entries of threads --json by id.
func threadsJSON(t *testing.T, m *memctl) map[string]map[string]any {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal([]byte(m.must("threads", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, e := range list {
		out[e["id"].(string)] = e
	}
	return out
}

func compactJSON(t *testing.T, m *memctl, args ...string) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(m.must(append([]string{"compact", "--json"}, args...)...)), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// A thread set to --limit 5000 shows it in threads, is compacted at 5000 by a plain compact,
// and a flag of compact still wins over it.
func TestSetLimitUsedByCompactAndThreads(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", testdata(longFile))
	m.must("import", "other", testdata(longFile))
	m.must("set", "t1", "--limit", "5000")

	ths := threadsJSON(t, m)
	if ths["t1"]["token_limit"] != 5000.0 || ths["t1"]["strategy"] != "summarize" {
		t.Fatalf("threads --json t1: %v; want token_limit 5000, strategy summarize", ths["t1"])
	}
	if ths["other"]["token_limit"] != 128000.0 || ths["other"]["strategy"] != "summarize" {
		t.Fatalf("threads --json other: %v; want the config's token_limit 128000", ths["other"])
	}
	if out := m.must("threads"); !strings.Contains(out, "LIMIT") || !strings.Contains(out, " 5000 ") || !strings.Contains(out, " 128000 ") {
		t.Fatalf("threads does not show each thread's limit:\n%s", out)
	}

	// The flag wins: at 20000 the thread (10,655 tokens) is under the trigger.
	if rep := compactJSON(t, m, "t1", "--limit", "20000"); rep["status"] != "not_needed" || rep["token_limit"] != 20000.0 {
		t.Fatalf("compact --limit 20000: %v; want not_needed at 20000", rep)
	}
	// The thread's limit wins over the config's (128000, under which nothing is due).
	rep := compactJSON(t, m, "t1")
	if rep["status"] != "applied" || rep["token_limit"] != 5000.0 || rep["tokens_after"].(float64) > 5000 {
		t.Fatalf("plain compact: %v; want applied at the thread's 5000", rep)
	}
	if rep := compactJSON(t, m, "other"); rep["status"] != "not_needed" || rep["token_limit"] != 128000.0 {
		t.Fatalf("compact of the thread without settings: %v; want not_needed at 128000", rep)
	}

	// --unset clears it: the config's limit is back.
	var got map[string]any
	json.Unmarshal([]byte(m.must("set", "t1", "--unset", "token_limit", "--json")), &got)
	if eff := got["effective"].(map[string]any); eff["token_limit"] != 128000.0 || len(got["settings"].(map[string]any)) != 0 {
		t.Fatalf("set --unset token_limit: %v; want no stored setting and the config's 128000", got)
	}
	if ths := threadsJSON(t, m); ths["t1"]["token_limit"] != 128000.0 {
		t.Fatalf("threads after --unset: %v", ths["t1"])
	}
}

// set keeps what it is not told to change, and reports the effective settings with their
// source.
func TestSetMergesAndShows(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", testdata(longFile))
	m.must("set", "t1", "--limit", "9000", "--reserve", "0", "--model", "llama3.2")
	m.must("set", "t1", "--trigger", "0.9", "--ratio", "0.85")
	var got map[string]any
	json.Unmarshal([]byte(m.must("set", "t1", "--json")), &got)
	stored := got["settings"].(map[string]any)
	want := map[string]any{"token_limit": 9000.0, "reserve_tokens": 0.0, "model": "llama3.2", "trigger_ratio": 0.9, "target_ratio": 0.85}
	if len(stored) != len(want) {
		t.Fatalf("stored settings %v; want %v", stored, want)
	}
	for k, v := range want {
		if stored[k] != v {
			t.Fatalf("stored settings %v; want %v", stored, want)
		}
	}
	out := m.must("set", "t1")
	for _, s := range []string{"token_limit             9000       thread", "trigger_ratio           0.9        thread", "strategy                summarize  config", "llama3.2"} {
		if !strings.Contains(out, s) {
			t.Fatalf("set without flags does not show %q:\n%s", s, out)
		}
	}
}

// Impossible values exit 2 naming the flag and change nothing; an unknown thread exits 1.
func TestSetImpossibleValues(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", testdata(longFile))
	m.must("set", "t1", "--limit", "5000")
	before := m.must("set", "t1", "--json")
	for _, tc := range []struct {
		args []string
		say  string
	}{
		{[]string{"--limit", "0"}, "--limit 0"},
		{[]string{"--limit", "-5"}, "--limit -5"},
		{[]string{"--ratio", "NaN"}, "--ratio NaN"},
		{[]string{"--ratio", "0"}, "--ratio 0"},
		{[]string{"--trigger", "1.5"}, "--trigger 1.5"},
		{[]string{"--reserve", "-1"}, "--reserve -1"},
		{[]string{"--strategy", "shrink"}, `--strategy shrink: strategy "shrink" is not known`},
		{[]string{"--strategy", ""}, "--strategy: empty"},
		{[]string{"--model", ""}, "--model: empty"},
		{[]string{"--model", "a\nb"}, "control character"},
		{[]string{"--unset", "limit"}, `--unset limit: unknown setting "limit"`},
		{[]string{"--limit", "6000", "--unset", "token_limit"}, "--unset token_limit: --limit sets it"},
		{[]string{"--ratio", "0.7", "--trigger", "0.6"}, "--ratio 0.7: target_ratio 0.7 must be below trigger_ratio 0.6"},
		// With the stored limit 5000.
		{[]string{"--reserve", "5000"}, "--reserve 5000: token_limit 5000 must be above reserve_tokens 5000"},
		// With the config's trigger 0.8.
		{[]string{"--ratio", "0.9"}, "--ratio 0.9: target_ratio 0.9 must be below trigger_ratio 0.8"},
	} {
		code, out, errs := m.run(append([]string{"set", "t1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.say) || out != "" {
			t.Errorf("memctl set t1 %q: exit %d, stdout %q, stderr %q; want 2 saying %q", tc.args, code, out, errs, tc.say)
		}
	}
	if after := m.must("set", "t1", "--json"); after != before {
		t.Fatalf("a refused set changed the settings:\n%s\nwas\n%s", after, before)
	}
	if code, _, errs := m.run("set", "nope", "--limit", "5000"); code != 1 || !strings.Contains(errs, `thread not found: "nope"`) {
		t.Fatalf("set of an unknown thread: exit %d, %q; want 1", code, errs)
	}
	// compact checks its flags with the thread's settings: the thread's trigger 0.9 and target
	// 0.85 are fine, --trigger 0.6 under that target is not.
	m.must("set", "t1", "--trigger", "0.9", "--ratio", "0.85")
	if code, _, errs := m.run("compact", "t1", "--trigger", "0.6"); code != 2 || !strings.Contains(errs, "--trigger 0.6") {
		t.Fatalf("compact --trigger 0.6 under the thread's target 0.85: exit %d, %q; want 2 naming --trigger", code, errs)
	}
}
