package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// priced is a fake OpenAI-compatible server that answers every chat completion with a summary
// and the usage 900 prompt + 40 completion tokens, and counts the requests.
func priced(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		chats.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"## Goal and constraints\nThe work went on."}}],"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &chats
}

// onBackends runs test on SQLite and, as the tests of postgres_test.go, on PostgreSQL (a
// schema of its own on the server of MEMCASCADE_TEST_POSTGRES).
func onBackends(t *testing.T, test func(t *testing.T, m *memctl)) {
	t.Run("sqlite", func(t *testing.T) { test(t, newMemctl(t)) })
	t.Run("postgres", func(t *testing.T) {
		m := newMemctl(t)
		m.db = pgDatabase(t)
		test(t, m)
	})
}

// micros reads a cost in dollars as micro-dollars; -1 for none.
func micros(c *float64) int64 {
	if c == nil {
		return -1
	}
	return int64(math.Round(*c * 1e6))
}

// TestCostInReport: a provider with price_per_mtok {input: 2.5, output: 10} whose server
// reports 900 + 40 tokens a request costs 900×2.5 + 40×10 = 2650 micro-dollars a request:
// exactly that in report --json (the usage and each attempt), in attempts --json, in the
// report's text, and as the thread's compaction cost and total in threads --json. The
// offline rung, never called, has no cost.
func TestCostInReport(t *testing.T) {
	onBackends(t, func(t *testing.T, m *memctl) {
		srv, chats := priced(t)
		m.config = filepath.Join(m.dir, "memctl.yaml")
		cfg := fmt.Sprintf("cascade:\n  - name: paid\n    base_url: %s/v1\n    model: m\n    price_per_mtok: {input: 2.5, output: 10}\n  - name: offline\n    type: extractive\n", srv.URL)
		if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		m.must("import", "t1", conversationFiles(t)[0])
		m.must("compact", "t1", "--limit", "2000", "--force")
		n := chats.Load()
		if n == 0 {
			t.Fatal("the priced provider received no request")
		}
		var rep struct {
			Provider string `json:"provider"`
			Usage    struct {
				Requests int      `json:"requests"`
				Cost     *float64 `json:"cost"`
			} `json:"usage"`
			Attempts []struct {
				Provider string   `json:"provider"`
				Outcome  string   `json:"outcome"`
				Cost     *float64 `json:"cost"`
			} `json:"attempts"`
		}
		if err := json.Unmarshal([]byte(m.must("report", "1", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Provider != "paid" || rep.Usage.Requests != int(n) || micros(rep.Usage.Cost) != 2650*n {
			t.Errorf("report: provider %q, %d requests, cost %d micro-dollars; want paid, %d requests, %d", rep.Provider,
				rep.Usage.Requests, micros(rep.Usage.Cost), n, 2650*n)
		}
		for _, a := range rep.Attempts {
			if a.Outcome == "ok" && micros(a.Cost) != 2650 {
				t.Errorf("report attempt %+v: want a cost of 2650 micro-dollars", a)
			}
		}
		var ats []struct {
			Provider string   `json:"provider"`
			Cost     *float64 `json:"cost"`
		}
		if err := json.Unmarshal([]byte(m.must("attempts", "--json")), &ats); err != nil {
			t.Fatal(err)
		}
		if len(ats) != int(n) {
			t.Fatalf("attempts: %d, want %d", len(ats), n)
		}
		for _, a := range ats {
			if a.Provider != "paid" || micros(a.Cost) != 2650 {
				t.Errorf("attempt %s: cost %d micro-dollars, want 2650", a.Provider, micros(a.Cost))
			}
		}
		if text := m.must("report", "1"); !strings.Contains(text, fmt.Sprintf("completion tokens, $%s\n", dollarsText(2650*n))) ||
			!strings.Contains(text, "COST") || !strings.Contains(text, "$0.00265") {
			t.Errorf("report:\n%s\nwant the cost on the usage line and a COST column", text)
		}
		if text := m.must("attempts"); !strings.Contains(text, "COST") || !strings.Contains(text, "$0.00265") {
			t.Errorf("attempts:\n%s\nwant a COST column", text)
		}
		var ts []struct {
			ID             string   `json:"id"`
			CompactionCost *float64 `json:"compaction_cost"`
			Cost           *float64 `json:"cost"`
			Upstream       struct {
				Cost *float64 `json:"cost"`
			} `json:"upstream"`
		}
		if err := json.Unmarshal([]byte(m.must("threads", "--json")), &ts); err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || micros(ts[0].CompactionCost) != 2650*n || micros(ts[0].Cost) != 2650*n || ts[0].Upstream.Cost != nil {
			t.Errorf("threads: %+v; want compaction_cost and cost %d micro-dollars, no upstream cost", ts, 2650*n)
		}
	})
}

func dollarsText(micros int64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", float64(micros)/1e6), "0"), ".")
}

// TestNoPriceNoCost: a provider without a price gives attempts, reports and threads no cost
// (the key is omitted, not 0).
func TestNoPriceNoCost(t *testing.T) {
	onBackends(t, func(t *testing.T, m *memctl) {
		srv, _ := priced(t)
		m.config = filepath.Join(m.dir, "memctl.yaml")
		cfg := fmt.Sprintf("cascade:\n  - name: free\n    base_url: %s/v1\n    model: m\n", srv.URL)
		if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		m.must("import", "t1", conversationFiles(t)[0])
		m.must("compact", "t1", "--limit", "2000", "--force")
		for _, args := range [][]string{{"report", "1", "--json"}, {"attempts", "--json"}, {"threads", "--json"}} {
			if out := m.must(args...); strings.Contains(out, `"cost"`) || strings.Contains(out, `"compaction_cost"`) {
				t.Errorf("%s: a cost without a price:\n%s", strings.Join(args, " "), out)
			}
		}
		if out := m.must("attempts"); strings.Contains(out, "COST") {
			t.Errorf("attempts: a COST column without a price:\n%s", out)
		}
	})
}

// TestMaxCostSkipsDearProvider: with compaction.max_cost $0.01, a provider at $1000 per
// million tokens is estimated over it and skipped without a request (outcome skipped_cost,
// the estimate in its error); the cheap one after it writes the summary.
func TestMaxCostSkipsDearProvider(t *testing.T) {
	onBackends(t, func(t *testing.T, m *memctl) {
		dear, dearChats := priced(t)
		cheap, cheapChats := priced(t)
		m.config = filepath.Join(m.dir, "memctl.yaml")
		cfg := fmt.Sprintf(`compaction:
  max_cost: 0.01
cascade:
  - name: dear
    base_url: %s/v1
    model: m
    price_per_mtok: {input: 1000, output: 1000}
  - name: cheap
    base_url: %s/v1
    model: m
    price_per_mtok: {input: 0.1, output: 0.4}
  - name: offline
    type: extractive
`, dear.URL, cheap.URL)
		if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		m.must("import", "t1", conversationFiles(t)[0])
		m.must("compact", "t1", "--limit", "2000", "--force")
		if n := dearChats.Load(); n != 0 {
			t.Errorf("the dear provider received %d requests, want 0", n)
		}
		if cheapChats.Load() == 0 {
			t.Error("the cheap provider received no request")
		}
		var rep struct {
			Provider string `json:"provider"`
			Status   string `json:"status"`
			Attempts []struct {
				Provider string   `json:"provider"`
				Outcome  string   `json:"outcome"`
				Error    string   `json:"error"`
				Cost     *float64 `json:"cost"`
			} `json:"attempts"`
		}
		if err := json.Unmarshal([]byte(m.must("report", "1", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Status != "applied" || rep.Provider != "cheap" || len(rep.Attempts) < 2 {
			t.Fatalf("report: %+v; want applied by cheap after a skip of dear", rep)
		}
		skip := rep.Attempts[0]
		if skip.Provider != "dear" || skip.Outcome != "skipped_cost" || skip.Cost != nil ||
			!strings.Contains(skip.Error, "over max_cost $0.01") {
			t.Errorf("first attempt %+v: want dear skipped_cost, no cost, the estimate over max_cost $0.01", skip)
		}
		for _, a := range rep.Attempts[1:] {
			if a.Provider != "cheap" || micros(a.Cost) != 900*0.1+40*0.4 {
				t.Errorf("attempt %+v: want cheap at 106 micro-dollars", a)
			}
		}
	})
}

// TestPriceValidation: a negative or infinite price, a price on the free offline summarizer,
// a price that is not a mapping and a negative max_cost are refused, each at its key.
func TestPriceValidation(t *testing.T) {
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := `compaction:
  max_cost: -1
cascade:
  - name: a
    base_url: http://127.0.0.1:1/v1
    model: m
    price_per_mtok: {input: -0.5, output: .inf}
  - name: b
    base_url: http://127.0.0.1:1/v1
    model: m
    price_per_mtok: 3
  - name: offline
    type: extractive
    price_per_mtok: {input: 1, output: 1}
serve:
  price_per_mtok: {input: 1, outptu: 2}
`
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := m.run("config")
	if code == 0 {
		t.Fatal("config: exit 0 with bad prices")
	}
	for _, want := range []string{
		"compaction.max_cost: -1 must be a finite number of dollars, not negative",
		"cascade[0].price_per_mtok.input: -0.5 must be a finite number of dollars per million tokens, not negative",
		"cascade[0].price_per_mtok.output: +Inf must be a finite number",
		"cascade[1].price_per_mtok: expected a mapping of prices",
		"cascade[2].price_per_mtok: not used by type extractive",
		"serve.price_per_mtok.outptu: unknown key; did you mean output?",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr:\n%s\nwant %q", errs, want)
		}
	}
}
