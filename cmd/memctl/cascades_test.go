package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cascadeServers are three fake OpenAI-compatible servers: the default cascade's, and those of
// the named cascades big and small (a 2048-token window: a long middle is many parts to it).
type cascadeServers struct{ def, big, small *bodyLog }

func (c cascadeServers) counts() [3]int { return [3]int{c.def.count(), c.big.count(), c.small.count()} }

// cascadesMemctl is a memctl on db whose config has the cascades of servers.
func cascadesMemctl(t *testing.T, db string) (*memctl, cascadeServers) {
	t.Helper()
	srv := cascadeServers{&bodyLog{}, &bodyLog{}, &bodyLog{}}
	urls := make([]string, 3)
	for i, b := range []*bodyLog{srv.def, srv.big, srv.small} {
		s := httptest.NewServer(b)
		t.Cleanup(s.Close)
		urls[i] = s.URL
	}
	m := newMemctl(t)
	if db != "" {
		m.db = db
	}
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := fmt.Sprintf(`offline: false
compaction:
  token_limit: 6000
cascade:
  - {name: def, base_url: %s/v1, model: m, max_attempts: 1, context_window: 128000}
cascades:
  big:
    - {name: big, base_url: %s/v1, model: m, max_attempts: 1, context_window: 128000}
  small:
    - {name: small, base_url: %s/v1, model: m, max_attempts: 1, context_window: 2048, max_output_tokens: 256}
`, urls[0], urls[1], urls[2])
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return m, srv
}

// TestThreadCascades: a thread on a named cascade (memctl set --cascade) is summarized by that
// cascade's server only; with --part-cascade, the part cascade's server gets the parts of the
// middle and the thread's cascade one request, the final summary; --unset cascade puts the
// thread back on the default cascade; memctl copy copies the settings; a name the config does
// not define is exit 2 naming the flag and the name. On SQLite and on PostgreSQL.
func TestThreadCascades(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := ""
			if backend == "postgres" {
				db = pgDatabase(t)
			}
			m, srv := cascadesMemctl(t, db)
			conv := conversationFiles(t)[0]
			report := func(thread string) (rep struct{ Status, Provider string }) {
				t.Helper()
				if err := json.Unmarshal([]byte(m.must("compact", thread, "--force", "--json")), &rep); err != nil {
					t.Fatal(err)
				}
				return rep
			}

			m.must("import", "on-big", conv)
			m.must("set", "on-big", "--cascade", "big")
			if rep := report("on-big"); rep.Status != "applied" || rep.Provider != "big" || srv.counts() != [3]int{0, 1, 0} {
				t.Fatalf("thread on big: %+v, requests (def, big, small) %v; want applied by big, [0 1 0]", rep, srv.counts())
			}

			m.must("import", "in-parts", conv)
			m.must("set", "in-parts", "--cascade", "big", "--part-cascade", "small")
			rep := report("in-parts")
			got := srv.counts()
			if rep.Status != "applied" || rep.Provider != "big" || got[0] != 0 || got[1] != 2 || got[2] < 2 {
				t.Fatalf("thread on big, parts by small: %+v, requests (def, big, small) %v; want applied by big, [0 2 >=2]", rep, got)
			}
			t.Logf("%s: part cascade small got %d part requests, big 1 final request", backend, got[2])

			before := srv.counts()
			m.must("import", "back", conv)
			m.must("set", "back", "--cascade", "big")
			m.must("set", "back", "--unset", "cascade")
			if rep := report("back"); rep.Provider != "def" || srv.counts() != [3]int{before[0] + 1, before[1], before[2]} {
				t.Fatalf("after --unset cascade: %+v, requests %v -> %v; want the default cascade only", rep, before, srv.counts())
			}

			code, _, errs := m.run("set", "back", "--cascade", "nope")
			if code != 2 || !strings.Contains(errs, "--cascade nope") || !strings.Contains(errs, `"nope" is not a cascade`) {
				t.Fatalf("set --cascade nope: exit %d, %q; want exit 2 naming the flag and the name", code, errs)
			}

			dst := filepath.Join(m.dir, "copy.db")
			m.must("copy", m.db, dst)
			copied := *m
			copied.db = dst
			var shown struct {
				Settings  map[string]any
				Effective map[string]any
			}
			if err := json.Unmarshal([]byte(copied.must("set", "in-parts", "--json")), &shown); err != nil {
				t.Fatal(err)
			}
			if shown.Settings["cascade"] != "big" || shown.Settings["part_cascade"] != "small" || shown.Effective["cascade"] != "big" {
				t.Fatalf("the copied thread's settings: %v; want cascade big, part_cascade small", shown)
			}
		})
	}
}

// TestSetEveryCompactionKey: memctl set takes every key of the compaction section (but
// attempt_timeout) as a flag, shows it as the thread's, uses it (the thread's prompt file
// reaches the provider) and clears it with --unset; a bad value is exit 2 naming the flag.
func TestSetEveryCompactionKey(t *testing.T) {
	m, srv := cascadesMemctl(t, "")
	prompt := filepath.Join(m.dir, "prompt.txt")
	if err := os.WriteFile(prompt, []byte("Summarize for the billing team: keep every REFUND-MARKER amount.\n{{transcript}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.must("import", "t", conversationFiles(t)[0])
	m.must("set", "t", "--summary-max-tokens", "1500", "--summary-role", "user", "--max-passes", "4", "--total-timeout", "10m",
		"--emergency-ratio", "0.9", "--on-failure", "fit", "--prompt-file", prompt, "--max-failures", "5", "--cascade", "default", "--part-cascade", "none",
		"--queue-size", "5", "--max-cost", "0.75")
	var shown struct{ Settings, Effective map[string]any }
	if err := json.Unmarshal([]byte(m.must("set", "t", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"summary_max_tokens": 1500.0, "summary_role": "user", "max_passes": 4.0, "total_timeout": "10m",
		"emergency_ratio": 0.9, "on_failure": "fit", "prompt_file": prompt, "max_failures": 5.0, "cascade": "default", "part_cascade": "none",
		"queue_size": 5.0, "max_cost": 0.75}
	for k, v := range want {
		if shown.Settings[k] != v || shown.Effective[k] != v {
			t.Errorf("%s: stored %v, effective %v; want %v", k, shown.Settings[k], shown.Effective[k], v)
		}
	}
	if _, ok := shown.Settings["prompt"]; ok {
		t.Error("set --json shows the prompt's text; want its file only")
	}
	text := m.must("set", "t")
	for _, row := range []string{"summary_role            user", "prompt_file             " + prompt} {
		if !strings.Contains(text, row) {
			t.Errorf("set shows no row %q:\n%s", row, text)
		}
	}
	m.must("compact", "t", "--force")
	if !strings.Contains(srv.def.all(), "REFUND-MARKER") {
		t.Fatal("the thread's prompt file did not reach the provider")
	}
	for k := range want {
		m.must("set", "t", "--unset", k)
	}
	shown.Settings, shown.Effective = nil, nil
	if err := json.Unmarshal([]byte(m.must("set", "t", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Settings) != 0 || shown.Effective["prompt_file"] != "" || shown.Effective["summary_role"] != "system" ||
		shown.Effective["queue_size"] != 3.0 || shown.Effective["max_cost"] != 0.0 {
		t.Fatalf("after --unset of every key: stored %v, effective %v; want none stored, the defaults", shown.Settings, shown.Effective)
	}
	for _, bad := range [][]string{
		{"--max-passes", "0"}, {"--total-timeout", "-1m"}, {"--emergency-ratio", "1.5"}, {"--summary-role", "assistant"},
		{"--on-failure", "retry"}, {"--prompt-file", filepath.Join(m.dir, "missing.txt")}, {"--part-cascade", "gone"}, {"--cascade", "none"},
		{"--queue-size", "65"}, {"--queue-size", "0"}, {"--max-cost", "-1"},
	} {
		code, _, errs := m.run(append([]string{"set", "t"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[0]) {
			t.Errorf("set %s: exit %d, %q; want exit 2 naming the flag", strings.Join(bad, " "), code, errs)
		}
	}
}

// TestEvalCascade: memctl eval --cascade NAME is a configuration whose summaries come from that
// cascade's providers; without it, the offline summarizer writes them and no server is asked.
func TestEvalCascade(t *testing.T) {
	m, srv := cascadesMemctl(t, "")
	// On eval, --config names a configuration to compare: the config comes from MEMCTL_CONFIG.
	t.Setenv("MEMCTL_CONFIG", m.config)
	m.config = ""
	conv := conversationFiles(t)[0]
	// One probe of each kind: the replay, which the cascade serves, is the same whatever is
	// asked after it.
	probes := []string{"--max-probes", "1"}
	var res struct {
		Configs []struct {
			Name        string
			Compactions int
			Requests    int `json:"summarizer_requests"`
		}
	}
	if err := json.Unmarshal([]byte(m.must(append([]string{"eval", conv, "--limit", "3000", "--json"}, probes...)...)), &res); err != nil {
		t.Fatal(err)
	}
	if srv.counts() != [3]int{0, 0, 0} || len(res.Configs) != 1 || res.Configs[0].Compactions == 0 {
		t.Fatalf("eval without --cascade: %+v, requests %v; want compactions by the offline summarizer, no request", res, srv.counts())
	}
	if err := json.Unmarshal([]byte(m.must(append([]string{"eval", conv, "--limit", "3000", "--cascade", "big", "--json"}, probes...)...)), &res); err != nil {
		t.Fatal(err)
	}
	c := res.Configs[0]
	if c.Name != "summarize@big" || c.Compactions == 0 || srv.big.count() == 0 || srv.def.count() != 0 || srv.small.count() != 0 {
		t.Fatalf("eval --cascade big: %+v, requests (def, big, small) %v; want summarize@big compacted by big only", c, srv.counts())
	}
	if code, _, errs := m.run("eval", conv, "--cascade", "nope"); code != 2 || !strings.Contains(errs, "nope") {
		t.Fatalf("eval --cascade nope: exit %d, %q; want exit 2 naming it", code, errs)
	}
}

// TestCascadeCompletion: --cascade completes default and the config's cascades; --part-cascade
// also none.
func TestCascadeCompletion(t *testing.T) {
	m, _ := cascadesMemctl(t, "")
	t.Setenv("MEMCTL_CONFIG", m.config) // eval's --config is a configuration to compare
	m.config = ""
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"set", "t", "--cascade", ""}, []string{"default", "big", "small"}},
		{[]string{"set", "t", "--part-cascade", ""}, []string{"none", "default", "big", "small"}},
		{[]string{"eval", "t", "--cascade", "s"}, []string{"small"}},
	} {
		out := m.must(append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Join(lines[:len(lines)-1], ","); got != strings.Join(tc.want, ",") {
			t.Errorf("memctl %s completes %q; want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}
