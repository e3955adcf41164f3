package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/eval"
	"github.com/memcascade/memcascade/facts"
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
// half are answered more often from a summary than from the window, which has left their
// answers out.
func TestWindowForgetsEarly(t *testing.T) {
	msgs := load(t, airline)
	res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize", "window"), MaxProbes: 0})
	if err != nil {
		t.Fatal(err)
	}
	early := func(p eval.ProbeResult) bool {
		return p.Checkpoint == len(msgs) && p.Seq <= len(msgs)/2 && p.Kind == eval.KindRecall
	}
	sum, n := share(res.Configs[0], early)
	win, m := share(res.Configs[1], early)
	present := func(c eval.ConfigResult) int {
		in := 0
		for _, p := range c.Probes {
			if early(p) && p.Where != "" {
				in++
			}
		}
		return in
	}
	t.Logf("early recall probes at the end: summarize %.3f of %d (%d answers in the context), window %.3f of %d (%d)",
		sum, n, present(res.Configs[0]), win, m, present(res.Configs[1]))
	if n < 10 || n != m {
		t.Fatalf("early recall probes: %d under summarize, %d under window: the same probes must be asked", n, m)
	}
	if !(win < sum) || sum < 0.2 {
		t.Errorf("window %.3f is not below summarize %.3f on the early recall probes", win, sum)
	}
	if present(res.Configs[1]) >= present(res.Configs[0]) {
		t.Errorf("window keeps %d early answers, summarize %d", present(res.Configs[1]), present(res.Configs[0]))
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

// ledgerSummary is a fake summarizer, given to the compactor as a hook's summary (so that
// nothing it leaves out is put back): it writes the facts of the span, one per line as the
// ledger shows them (a call with its arguments and outcome, a user's words) and a value with
// the words that gave it in its message (msgs are the thread's messages, seq 1 first), as a
// summarizer that keeps each fact with its context would. With drop, it leaves out the facts
// whose value drop names, in every summary (a fact left out once is left out of every later
// summary too, as a summarizer that reads only the summary it folds in would).
func ledgerSummary(t *testing.T, msgs []chat.Message, drop map[string]bool) func(context.Context, compact.HookEvent) (compact.HookDecision, error) {
	return func(_ context.Context, ev compact.HookEvent) (compact.HookDecision, error) {
		var fs []facts.Fact
		if err := json.Unmarshal(ev.Facts, &fs); err != nil {
			t.Errorf("hook facts: %v", err)
			return compact.HookDecision{}, err
		}
		var b strings.Builder
		b.WriteString("Facts of the earlier conversation:\n")
		for _, f := range fs {
			if drop[f.Text] {
				continue
			}
			line := f.Text
			if f.Outcome != "" {
				line += " -> " + f.Outcome
			} else if f.Seq >= 1 && f.Seq <= len(msgs) {
				line = givenWith(msgs[f.Seq-1], f.Text)
			}
			if !holdsAny(line, drop) {
				b.WriteString("- " + line + "\n")
			}
		}
		return compact.HookDecision{Summary: b.String()}, nil
	}
}

// holdsAny reports whether line holds one of the values drop names (of four characters or more:
// a call's line names the values of its arguments).
func holdsAny(line string, drop map[string]bool) bool {
	for v, d := range drop {
		if d && len(v) >= 4 && strings.Contains(line, v) {
			return true
		}
	}
	return false
}

// givenWith is value with the words before it on its line of m (its text, then its tool
// calls one per line), at most eight (as a probe's cue is); value alone when m does not hold it.
func givenWith(m chat.Message, value string) string {
	text := m.Text()
	for _, c := range m.ToolCalls {
		text += "\n" + c.Function.Name + " " + c.Function.Arguments
	}
	i := strings.Index(text, value)
	if i < 0 {
		return value
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
	for n, in := 0, false; i > start; i-- {
		w := isWord(rune(text[i-1]))
		if in && !w {
			if n++; n == 8 {
				break
			}
		}
		in = w
	}
	return strings.Join(strings.Fields(text[i:strings.Index(text, value)]+value), " ")
}

// thirdOf names a third of the values of the facts of msgs: every third, in the order the
// thread first gives them.
func thirdOf(msgs []chat.Message) map[string]bool {
	var fm []facts.Message
	for _, m := range msgs {
		f := facts.Message{Role: m.Role, Content: m.Text(), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			f.ToolCalls = append(f.ToolCalls, facts.ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments, ID: tc.ID})
		}
		fm = append(fm, f)
	}
	fs := facts.Extract(fm)
	slices.SortStableFunc(fs, func(a, b facts.Fact) int { return a.Seq - b.Seq })
	drop, n := map[string]bool{}, 0
	for _, f := range fs {
		if _, seen := drop[f.Text]; seen {
			continue
		}
		drop[f.Text] = n%3 == 0
		n++
	}
	return drop
}

// TestSummarizerThatDrops: on a thread whose facts its summaries can hold whole, a summarizer
// that leaves out a third of the facts (every third value the thread gives) loses at least that
// share of the recall the one that keeps them all has, on the recall probes only the summaries
// can answer (asked at the end, so the same in both runs, whose answer the run that keeps every
// fact found in a summary and in no message kept verbatim), and no probe is answered whose
// answer is gone.
func TestSummarizerThatDrops(t *testing.T) {
	msgs := factsThread(60)
	drop := thirdOf(msgs)
	dropped := 0
	for _, d := range drop {
		if d {
			dropped++
		}
	}
	share3 := float64(dropped) / float64(len(drop))
	var runs [2]eval.ConfigResult
	for i, d := range []map[string]bool{nil, drop} {
		res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize"), MaxProbes: 0,
			BeforeCompaction: ledgerSummary(t, msgs, d)})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = res.Configs[0]
		if c := runs[i]; c.Failed != 0 || c.Compactions == 0 {
			t.Fatalf("run %d: %d compactions, %d failed", i, c.Compactions, c.Failed)
		}
	}
	if runs[0].FactsDropped > 1 || runs[1].FactsDropped < 10 {
		t.Fatalf("facts dropped: %d keeping all, %d dropping a third", runs[0].FactsDropped, runs[1].FactsDropped)
	}
	only := map[string]bool{} // the probes at the end only the full summaries hold the answer of
	for _, p := range runs[0].Probes {
		if p.Checkpoint == len(msgs) && p.Kind == eval.KindRecall && p.Where == "summary" {
			only[p.Text] = true
		}
	}
	pick := func(p eval.ProbeResult) bool { return p.Checkpoint == len(msgs) && only[p.Text] }
	full, n := share(runs[0], pick)
	third, m := share(runs[1], pick)
	lost := 0
	for _, p := range runs[1].Probes {
		if !pick(p) {
			continue
		}
		if drop[p.Expected] {
			lost++
		}
		if p.Where == "" && (p.Correct || p.Answer != "" && eval.Match(p.Expected, p.Answer)) {
			t.Errorf("probe %q: its answer %q is not in the context, yet answered", p.Text, p.Expected)
		}
	}
	fall := 1 - third/full
	t.Logf("%d of the thread's %d values left out (%.3f); recall probes only the summaries answer, at the end: all kept %.3f of %d, a third left out %.3f of %d (falls by %.3f; %d of the answers left out)",
		dropped, len(drop), share3, full, n, third, m, fall, lost)
	if n < 10 || n != m || full < 0.9 {
		t.Fatalf("all kept %.3f of %d, a third left out of %d: the same probes must be asked, nearly all answered", full, n, m)
	}
	if share3 < 0.32 || fall < share3 {
		t.Errorf("%.3f of the values left out: recall falls by %.3f (%.3f to %.3f), want at least %.3f", share3, fall, full, third, share3)
	}
}

// factsThread is a thread of n turns, each user message giving one value (an id, an amount or
// a date) of an account named once in the thread, each reply a long paragraph that gives none:
// a thread whose facts a summary can hold whole, and whose recall probes each ask one of them.
func factsThread(n int) []chat.Message {
	syl := []string{"ka", "vo", "mi", "lu", "ra", "do", "te", "so", "ni", "pe"}
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You keep track of the user's accounts.")}
	for k := range n {
		name := syl[k%10] + syl[k/10%10] + syl[(3*k+1)%10] + "n"
		var fact string
		switch k % 3 {
		case 0:
			fact = fmt.Sprintf("Please note for the %s account: its booking code is Q%c%02dR%c.", name, 'A'+k%26, k, 'Z'-k%26)
		case 1:
			fact = fmt.Sprintf("For the %s account, the refund owed is $%d,%03d.50 in total.", name, 1+k%9, 100+k*7)
		default:
			fact = fmt.Sprintf("The %s account renews on 2025-%02d-%02d, mark it.", name, 1+k%12, 1+k%28)
		}
		msgs = append(msgs, chat.TextMessage(chat.RoleUser, fact),
			chat.TextMessage(chat.RoleAssistant, "Noted for the "+name+" account. "+strings.Repeat(
				"I have written it down with the other accounts, and I will keep it in mind when you ask about renewals, refunds or bookings later on. ", 4)))
	}
	return msgs
}
