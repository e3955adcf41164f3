package compact_test

// The fuzz target of the planner. `go test ./compact` runs its seeds (the f.Add calls below);
// `go test ./compact -run XXX -fuzz FuzzPlan` explores further. Helpers here carry an fz prefix
// so they never collide with the package's other test helpers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// FuzzPlan checks MakePlan's invariants on active contexts generated from the fuzz bytes:
// roles, tool calls with reused, parallel and pending ids, an earlier summary, token sizes,
// settings and the keep budget.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(bytes.Repeat([]byte{4, 5, 6, 7, 1, 200}, 20))
	f.Add([]byte("system prompt, then a summary, then tool calls answered out of order"))
	f.Add(bytes.Repeat([]byte{255, 0, 128, 64, 32, 16, 8, 4, 2, 1}, 12))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, s, keep := fzPlanInput(data)
		p := compact.MakePlan(entries, s, keep)
		if why := fzPlanViolation(entries, s, keep, p); why != "" {
			t.Fatalf("%s\nplan %+v\nsettings %+v keep %d\nentries:\n%s", why, p, s, keep, fzDescribe(entries))
		}
	})
}

type fzReader struct{ b []byte }

func (r *fzReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	v := int(r.b[0])
	r.b = r.b[1:]
	return v
}

// fzPlanInput builds an active context, settings and a keep budget from data. Messages follow
// the store's rules (tool calls only on assistant messages, results answer an unanswered call,
// ids not repeated while unanswered), as the planner only ever sees validated history.
func fzPlanInput(data []byte) ([]memory.Entry, compact.Settings, int) {
	r := &fzReader{b: data}
	s := compact.Settings{
		TokenLimit:       200 + (r.next()<<8|r.next())%30000,
		TargetRatio:      []float64{0.5, 0.1, 0.3, 0.7, 0.9, 0.05}[r.next()%6],
		TriggerRatio:     0.95,
		SummaryMaxTokens: []int{0, 1, 50, 500, 2048, 100000}[r.next()%6],
	}
	if v := r.next(); v%4 == 0 {
		s.ReserveTokens = s.TokenLimit * (v / 4) / 80
	}
	if s.ReserveTokens >= s.TokenLimit {
		s.ReserveTokens = s.TokenLimit - 1
	}
	s = s.WithDefaults() // MakePlan takes filled settings
	keep := int(float64(s.Budget()) * s.TargetRatio)
	if v := r.next(); v%5 == 0 {
		keep = (v << 4) % (s.Budget() + 1)
	}
	tokens := func() int {
		n := 1 + r.next()%120
		if r.next()%16 == 0 {
			n *= 60
		}
		return n
	}
	var es []memory.Entry
	seq := int64(0)
	add := func(m chat.Message) {
		seq++
		es = append(es, memory.Entry{Seq: seq, Tokens: tokens(), Message: m})
	}
	for range r.next() % 4 {
		add(chat.TextMessage([]string{"system", "developer"}[r.next()%2], "pinned"))
	}
	if r.next()%3 == 0 { // a summary of earlier messages
		from := seq + 1
		seq += int64(1 + r.next()%30)
		es = append(es, memory.Entry{Tokens: tokens(), Message: chat.TextMessage([]string{"system", "user"}[r.next()%2], "summary"),
			CompactionID: 7, CoversFrom: from, CoversTo: seq})
	}
	var open []string // unanswered call ids, oldest first
	n := r.next() % 80
	for range n {
		switch op := r.next() % 10; {
		case op < 3:
			add(chat.TextMessage("user", "u"))
		case op == 3:
			add(chat.TextMessage([]string{"system", "developer"}[r.next()%2], "late"))
		case op == 4:
			add(chat.TextMessage("assistant", "a"))
		case op < 7: // 1-3 parallel calls; ids come from a small pool, so they are reused
			m := chat.Message{Role: "assistant", Content: json.RawMessage("null")}
			for range 1 + r.next()%3 {
				id := fmt.Sprintf("c%d", r.next()%5)
				if fzContains(open, id) {
					continue
				}
				open = append(open, id)
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: "{}"}})
			}
			if len(m.ToolCalls) == 0 {
				m = chat.TextMessage("assistant", "no free id")
			}
			add(m)
		default: // a result, for any open call (parallel results come in any order)
			if len(open) == 0 {
				add(chat.TextMessage("user", "u"))
				continue
			}
			i := r.next() % len(open)
			m := chat.TextMessage("tool", "result")
			m.ToolCallID = open[i]
			open = append(open[:i], open[i+1:]...)
			add(m)
		}
	}
	return es, s, keep
}

func fzContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func fzDescribe(es []memory.Entry) string {
	var b strings.Builder
	for i, e := range es {
		fmt.Fprintf(&b, "  %d seq=%d tokens=%d role=%s", i, e.Seq, e.Tokens, e.Message.Role)
		if e.CompactionID != 0 {
			fmt.Fprintf(&b, " summary of %d-%d", e.CoversFrom, e.CoversTo)
		}
		for _, c := range e.Message.ToolCalls {
			fmt.Fprintf(&b, " call=%s", c.ID)
		}
		if e.Message.ToolCallID != "" {
			fmt.Fprintf(&b, " answers=%s", e.Message.ToolCallID)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fzPlanViolation checks the invariants of MakePlan's doc comment, computed independently.
func fzPlanViolation(es []memory.Entry, s compact.Settings, keep int, p compact.Plan) string {
	n := len(es)
	sum := func(from, to int) int {
		t := 0
		for _, e := range es[from:to] {
			t += e.Tokens
		}
		return t
	}
	pinned := 0
	for pinned < n && es[pinned].CompactionID == 0 && (es[pinned].Message.Role == "system" || es[pinned].Message.Role == "developer") {
		pinned++
	}
	if p.Pinned != pinned {
		return fmt.Sprintf("pinned %d, want the leading system/developer run of %d", p.Pinned, pinned)
	}
	if p.Pinned < 0 || p.Pinned > p.Kept || p.Kept > n {
		return fmt.Sprintf("want 0 <= pinned %d <= kept %d <= len %d", p.Pinned, p.Kept, n)
	}
	if p.Kept == n && !p.Ineffective {
		return "nothing kept, yet the plan is not ineffective"
	}
	// Pair each result with the latest unanswered call of its id.
	type pair struct{ call, result int }
	var pairs []pair
	open := map[string][]int{}
	for i, e := range es {
		if id := e.Message.ToolCallID; e.Message.Role == "tool" && len(open[id]) > 0 {
			c := open[id][len(open[id])-1]
			open[id] = open[id][:len(open[id])-1]
			pairs = append(pairs, pair{c, i})
		}
		for _, c := range e.Message.ToolCalls {
			open[c.ID] = append(open[c.ID], i)
		}
	}
	for _, calls := range open { // a pending call: its result may arrive after the end
		for _, c := range calls {
			pairs = append(pairs, pair{c, n})
		}
	}
	splits := func(at int) bool {
		for _, pr := range pairs {
			if pr.call < at && at <= pr.result {
				return true
			}
		}
		return false
	}
	var cuts []int
	for i := pinned + 1; i < n; i++ {
		if es[i].Message.Role != "tool" && !splits(i) {
			cuts = append(cuts, i)
		}
	}
	if p.Kept < n {
		if es[p.Kept].Message.Role == "tool" {
			return "the kept part starts with a tool result"
		}
		if splits(p.Kept) {
			return "a call before the kept part has its result in it"
		}
		if splits(p.Pinned) {
			return "a call in the pinned part has its result after it"
		}
	}
	if len(cuts) == 0 {
		if p.Kept != n || !p.Ineffective {
			return "no unit boundary after the pinned messages, yet the plan summarizes"
		}
		return ""
	}
	newest := cuts[len(cuts)-1]
	if p.Kept > newest {
		return fmt.Sprintf("the newest unit (from %d) is not kept (kept from %d)", newest, p.Kept)
	}
	k := -1
	for i, c := range cuts {
		if c == p.Kept {
			k = i
		}
	}
	if k < 0 {
		return fmt.Sprintf("kept starts at %d, not at a unit boundary %v", p.Kept, cuts)
	}
	if p.PinnedTokens != sum(0, p.Pinned) || p.MiddleTokens != sum(p.Pinned, p.Kept) || p.KeptTokens != sum(p.Kept, n) {
		return "token sums differ from the entries"
	}
	if p.PinnedTokens+p.KeptTokens > keep && p.Kept != newest {
		return fmt.Sprintf("pinned + kept = %d over the keep budget %d with more than the newest unit kept", p.PinnedTokens+p.KeptTokens, keep)
	}
	if k > 0 && p.PinnedTokens+sum(cuts[k-1], n) <= keep {
		return fmt.Sprintf("the unit before the kept part (from %d) would fit the keep budget %d", cuts[k-1], keep)
	}
	maxSummary := s.SummaryMaxTokens
	if maxSummary == 0 {
		maxSummary = compact.DefaultSummaryMaxTokens
	}
	if p.SummaryBudget > maxSummary {
		return fmt.Sprintf("summary budget %d over summary_max_tokens %d", p.SummaryBudget, maxSummary)
	}
	if p.SummaryBudget > s.Budget()-p.PinnedTokens-p.KeptTokens {
		return fmt.Sprintf("summary budget %d over L - pinned - kept = %d", p.SummaryBudget, s.Budget()-p.PinnedTokens-p.KeptTokens)
	}
	// The range covers exactly the middle's messages (a summary contributes its range).
	covered := map[int64]bool{}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, e := range es[p.Pinned:p.Kept] {
		from, to := e.Seq, e.Seq
		if e.CompactionID != 0 {
			from, to = e.CoversFrom, e.CoversTo
		}
		for q := from; q <= to; q++ {
			covered[q] = true
		}
		lo, hi = min(lo, from), max(hi, to)
	}
	if p.FromSeq != lo || p.ToSeq != hi || int64(len(covered)) != hi-lo+1 {
		return fmt.Sprintf("range %d-%d, the middle covers %d-%d (%d messages)", p.FromSeq, p.ToSeq, lo, hi, len(covered))
	}
	active := p.PinnedTokens + p.MiddleTokens + p.KeptTokens + tokencount.ReplyPriming
	if !p.Ineffective {
		if p.MiddleLen() < 1 || p.SummaryBudget < 32 {
			return fmt.Sprintf("effective plan with %d middle entries and a summary budget of %d", p.MiddleLen(), p.SummaryBudget)
		}
		if saved := p.MiddleTokens - p.SummaryBudget; float64(saved) < 0.1*float64(active) {
			return fmt.Sprintf("a summary within budget saves %d of %d tokens, under 10%%", saved, active)
		}
	} else if p.SummaryBudget >= 32 {
		return fmt.Sprintf("ineffective (%s) with a summary budget of %d", p.Why, p.SummaryBudget)
	}
	return ""
}
