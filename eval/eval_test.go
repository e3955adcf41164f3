package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/eval"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/memory"
)

const airline = "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"

func load(t *testing.T, file string) []chat.Message {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msgs, err := eval.Load(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func configs(limit int, strategies ...string) []eval.Config {
	var out []eval.Config
	for _, s := range strategies {
		out = append(out, eval.Config{Name: s, Settings: compact.Settings{TokenLimit: limit, Strategy: s}})
	}
	return out
}

// share is the share of the probes of c that keep selects answered right, and their number.
func share(c eval.ConfigResult, keep func(eval.ProbeResult) bool) (float64, int) {
	n, ok := 0, 0
	for _, p := range c.Probes {
		if keep(p) {
			n++
			if p.Correct {
				ok++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(ok) / float64(n), n
}

// TestWindowForgetsEarly: at the end of the airline thread, the recall probes of its first
// half are answered more often from a summary than from the window, which has left them out.
func TestWindowForgetsEarly(t *testing.T) {
	msgs := load(t, airline)
	res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize", "window"), MaxProbes: 20})
	if err != nil {
		t.Fatal(err)
	}
	early := func(p eval.ProbeResult) bool {
		return p.Checkpoint == len(msgs) && p.Seq <= len(msgs)/2 && (p.Kind == eval.KindRecall || p.Kind == eval.KindConstraint)
	}
	sum, n := share(res.Configs[0], early)
	win, m := share(res.Configs[1], early)
	t.Logf("early recall at the end: summarize %.3f of %d, window %.3f of %d", sum, n, win, m)
	if n == 0 || n != m {
		t.Fatalf("early probes: %d under summarize, %d under window: the same probes must be asked", n, m)
	}
	if !(win < sum) {
		t.Errorf("window %.3f is not below summarize %.3f on the early probes", win, sum)
	}
	// The recall probes alone: their answers are still in the summarized context, not in the
	// window (the lookup reads few of them: a summary lists values apart from their messages).
	present := func(c eval.ConfigResult) (int, int) {
		in, n := 0, 0
		for _, p := range c.Probes {
			if early(p) && p.Kind == eval.KindRecall {
				n++
				if p.Where != "" {
					in++
				}
			}
		}
		return in, n
	}
	si, sn := present(res.Configs[0])
	wi, wn := present(res.Configs[1])
	t.Logf("early recall probes whose answer is in the context: summarize %d of %d, window %d of %d", si, sn, wi, wn)
	if sn == 0 || wi >= si {
		t.Errorf("window keeps %d of %d early answers, summarize %d of %d", wi, wn, si, sn)
	}
}

// TestContextWithinLimit: every probe sent holds at most the limit, question included. Mask
// leaves the airline thread over 4,000 tokens (it masks old results, and the policy, the calls
// and the replies outgrow the limit): those probes are sent the newest entries that fit, and
// say so.
func TestContextWithinLimit(t *testing.T) {
	msgs := load(t, airline)
	res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize", "mask", "window"), MaxProbes: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Configs {
		if c.Asked == 0 || c.Checkpoints < 2 {
			t.Fatalf("%s: %d probes at %d checkpoints", c.Name, c.Asked, c.Checkpoints)
		}
		cut := 0
		for _, p := range c.Probes {
			if p.Tokens > 4000 || p.BaselineTok > 4000 {
				t.Errorf("%s: probe %q sent %d tokens (baseline %d), over 4000", c.Name, p.Text, p.Tokens, p.BaselineTok)
			}
			if p.Cut {
				cut++
				if p.Uncut <= 4000 || p.Uncut <= p.Tokens {
					t.Errorf("%s: probe %q cut from %d tokens to %d", c.Name, p.Text, p.Uncut, p.Tokens)
				}
			} else if p.Uncut != 0 {
				t.Errorf("%s: probe %q not cut, uncut tokens %d", c.Name, p.Text, p.Uncut)
			}
		}
		if cut != c.Cut {
			t.Errorf("%s: %d probes cut, the count says %d", c.Name, cut, c.Cut)
		}
		if want := c.Name == "mask"; (cut > 0) != want {
			t.Errorf("%s: %d probes cut", c.Name, cut)
		}
	}
	var b strings.Builder
	eval.Table(&b, res)
	if !strings.Contains(b.String(), "(CUT: ") {
		t.Errorf("the table does not explain its cut probes:\n%s", b.String())
	}
}

// TestProbesNeverWithoutAnswer: every probe's expected answer is in the history before its
// checkpoint, and the question does not hold it.
func TestProbesNeverWithoutAnswer(t *testing.T) {
	msgs := load(t, airline)
	kinds := map[string]int{}
	for _, n := range []int{20, len(msgs)} {
		for _, p := range eval.Probes(msgs, n, 0) {
			kinds[p.Kind]++
			var hist strings.Builder
			for _, m := range msgs[:n] {
				hist.WriteString(m.Text() + "\n")
				for _, c := range m.ToolCalls {
					hist.WriteString(c.Function.Arguments + "\n")
				}
			}
			if !strings.Contains(strings.ToLower(hist.String()), strings.ToLower(p.Expected)) {
				t.Errorf("probe %q: %q is not in the first %d messages", p.Text, p.Expected, n)
			}
			if p.Seq > n {
				t.Errorf("probe %q at %d asks of message %d", p.Text, n, p.Seq)
			}
			if p.Kind == eval.KindRecall && strings.Contains(p.Text, p.Expected) {
				t.Errorf("probe %q holds its answer %q", p.Text, p.Expected)
			}
		}
	}
	for _, k := range eval.ProbeKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s probe", k)
		}
	}
}

// TestRemoteAnswerer: against a fake OpenAI-compatible server each request holds exactly the
// compacted active context and the question.
func TestRemoteAnswerer(t *testing.T) {
	msgs := load(t, airline)
	var mu sync.Mutex
	var got [][]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request "+r.URL.Path, 400)
			return
		}
		var body struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "m" {
			http.Error(w, "bad body", 400)
			return
		}
		mu.Lock()
		got = append(got, body.Messages)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"omar_davis_3817"}}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize"), MaxProbes: 2, Dir: dir,
		Answerer: eval.Remote{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Configs[0]
	sent := 2 * len(c.Probes) // the compacted context's, the baseline's
	if len(got) != sent || sent == 0 {
		t.Fatalf("%d requests, want %d", len(got), sent)
	}
	// The last probes are asked at the end: their compacted context is the thread's active
	// context as the scratch store holds it.
	if st, err := os.Stat(filepath.Join(dir, "config1.db")); err != nil {
		t.Fatal(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("scratch database mode %v, want 0600", st.Mode().Perm())
	}
	s, err := memory.Open(context.Background(), filepath.Join(dir, "config1.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.Active(context.Background(), eval.Thread)
	if err != nil {
		t.Fatal(err)
	}
	if a.Summary == 0 {
		t.Fatal("no summary in the active context: nothing was compacted")
	}
	// Pair the requests with the probes: the compacted context's, then the baseline's.
	r, final := 0, 0
	for _, p := range c.Probes {
		if p.Cut {
			t.Errorf("probe %q: the summarized context was cut", p.Text)
		}
		if p.Checkpoint == len(msgs) {
			final++
			want, _ := json.Marshal(eval.RequestMessages(a.Messages(), p.Question))
			have, _ := json.Marshal(got[r])
			if !bytes.Equal(compactJSON(t, want), compactJSON(t, have)) {
				t.Errorf("probe %q: the request is not the active context and the question:\n got %.300s\nwant %.300s", p.Text, have, want)
			}
			if len(got[r]) != len(a.Entries)+1 {
				t.Errorf("probe %q: the request holds %d messages, the active context %d", p.Text, len(got[r]), len(a.Entries))
			}
		}
		r += 2
	}
	if final == 0 {
		t.Fatal("no probe sent at the end")
	}
	for _, p := range c.Probes {
		if p.Answer != "omar_davis_3817" {
			t.Errorf("probe %q: answer %q, not the model's", p.Text, p.Answer)
		}
	}
}

func compactJSON(t *testing.T, b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

// TestCancel: a cancelled run returns what was measured, marked interrupted.
func TestCancel(t *testing.T) {
	msgs := load(t, airline)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := eval.Run(ctx, eval.Options{Messages: msgs, Configs: configs(4000, "summarize", "window"), MaxProbes: 2,
		Progress: func(string) {
			if n++; n == 2 {
				cancel()
			}
		}})
	if err == nil || !res.Interrupted {
		t.Fatalf("err %v, interrupted %v", err, res.Interrupted)
	}
	if len(res.Configs) != 1 || res.Configs[0].Asked == 0 {
		t.Fatalf("want the probes of the first configuration so far, got %+v", res.Configs)
	}
}

// TestSummarizerThatDrops: a summarizer that leaves out a random third of the facts (lifesim's
// "third") keeps the answers of fewer early probes than the offline summarizer, by at least
// that share.
func TestSummarizerThatDrops(t *testing.T) {
	msgs := load(t, airline)
	early := func(p eval.ProbeResult) bool { return p.Checkpoint == len(msgs) && p.Seq <= len(msgs)/2 }
	var got [2]float64
	var n [2]int
	for i, sum := range []func(s *memory.Store) (compact.Summarizer, error){nil, func(s *memory.Store) (compact.Summarizer, error) { return lifesim.Provider(s, "third", 1) }} {
		res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize"), Summarizer: sum, MaxProbes: 60})
		if err != nil {
			t.Fatal(err)
		}
		got[i], n[i] = share(res.Configs[0], early)
	}
	t.Logf("early probes at the end: offline %.3f of %d, third %.3f of %d", got[0], n[0], got[1], n[1])
	if n[0] == 0 || n[0] != n[1] || got[0] == 0 {
		t.Fatalf("offline %.3f of %d, third of %d: the same probes must be asked, some answered", got[0], n[0], n[1])
	}
	if got[1] > got[0]*2/3 {
		t.Errorf("third %.3f: not a third below offline %.3f", got[1], got[0])
	}
}
