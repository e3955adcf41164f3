// Package lifesim is the engine of the life of compactions (issue 20): a conversation
// replayed message by message into a thread, compacted whenever ShouldCompact says so, each
// compaction folding the previous summary in, through one of three summarizers. After every
// compaction every fact and action of the original messages must be in the active context or
// named in some report's facts_dropped (Simulate returns a *LostError otherwise), and it counts
// the compactions after which the newest user message was out of the active context. Every
// write action counted as kept is on one line with its key arguments (facts.Kept checks a tool
// call on one line). The memory tests and bench's life step run it.
package lifesim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/summarycheck"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Kinds are the summarizers of a simulation: the offline rung, a fake whose summaries hold no
// fact, and a fake that writes a plausible summary leaving out a random third of the facts.
var Kinds = []string{"offline", "nofacts", "third"}

// Limits are the token limits of the whole matrix.
var Limits = []int{2048, 4096, 8192, 32768}

// Stats are the figures of one simulated life.
type Stats struct {
	Turns, Compactions, Failed int
	Facts, Actions, Writes     int // of the original messages
	Kept, Named, Lost          int // facts and actions at the end
	WritesKept, WritesNamed    int
	TokensSum                  int    // active tokens summed over the turns
	NewestUserMissing          int    // compactions after which the newest user message was out of the active context
	SectionsBroken             int    // applied compactions whose summary lacks the prompt's sections (summarycheck.Sections)
	SectionsError              string // the first such summary's error
}

// Add adds o's figures to st's.
func (st *Stats) Add(o Stats) {
	st.Turns += o.Turns
	st.Compactions += o.Compactions
	st.Failed += o.Failed
	st.Facts += o.Facts
	st.Actions += o.Actions
	st.Writes += o.Writes
	st.Kept += o.Kept
	st.Named += o.Named
	st.Lost += o.Lost
	st.WritesKept += o.WritesKept
	st.WritesNamed += o.WritesNamed
	st.TokensSum += o.TokensSum
	st.NewestUserMissing += o.NewestUserMissing
	st.SectionsBroken += o.SectionsBroken
	if st.SectionsError == "" {
		st.SectionsError = o.SectionsError
	}
}

// LostError is the failure of a life: after a compaction, facts of the original messages are
// neither in the active context nor named by any report.
type LostError struct {
	When  string   // "after message N, compaction K"
	Lost  []string // the facts' texts
	Trail []string // the thread's last reports, one line each
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%s: %d facts of the original messages lost, no report names them: %q", e.When, len(e.Lost), e.Lost)
}

// Thread is the thread a simulation replays into.
const Thread = "t"

// Cooldown is how long a summarizer's entry waits after a failure by default (its MaxCooldown is
// 60 times it). Through it a life depends on timing; a life with a cooldown of a nanosecond
// (SimulateWith) does not.
const Cooldown = time.Second

func entry(name string, p cascade.Provider, cooldown time.Duration) cascade.Entry {
	return cascade.Entry{Name: name, Type: "fake", Model: name + "-model", Provider: p,
		MaxOutputTokens: 256, MaxAttempts: 1, Cooldown: cooldown, MaxCooldown: 60 * cooldown}
}

// Provider is the cascade of summarizer kind (one of Kinds) on s's database; seed drives the
// random third the "third" kind leaves out.
func Provider(s *memory.Store, kind string, seed uint64) (*cascade.Cascade, error) {
	return ProviderWith(s, kind, seed, Cooldown)
}

// ProviderWith is Provider with its entries' cooldown after a failure.
func ProviderWith(s *memory.Store, kind string, seed uint64, cooldown time.Duration) (*cascade.Cascade, error) {
	switch kind {
	case "offline":
		c, err := s.Counter(tokencount.EncodingO200k)
		if err != nil {
			return nil, err
		}
		return cascade.New(s.DB(), cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive",
			Provider: extractive.Summarizer{Count: c.CountText}, MaxAttempts: 1, Cooldown: cooldown, MaxCooldown: 60 * cooldown}), nil
	case "nofacts":
		// Prose with no fact at all, as long as it is allowed to: every fact must be appended.
		filler := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
			words := max(req.TargetTokens, req.MaxTokens) * 3 / 4
			return llm.Response{Text: strings.TrimSpace(strings.Repeat("the conversation went on. ", max(1, words/4))), FinishReason: "stop"}, nil
		}}
		return cascade.New(s.DB(), entry("nofacts", filler, cooldown)), nil
	case "third":
	default:
		return nil, fmt.Errorf("lifesim: unknown summarizer %q", kind)
	}
	rng := rand.New(rand.NewPCG(seed, 20))
	third := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		var msgs []facts.Message
		for _, earlier := range []string{req.Previous, req.Running} {
			if earlier != "" {
				msgs = append(msgs, facts.Message{Role: "assistant", Content: earlier})
			}
		}
		for _, m := range req.Transcript {
			msgs = append(msgs, facts.FromTranscript(m))
		}
		var b strings.Builder
		b.WriteString("## Goal and constraints\n- The user asked for changes to bookings.\n\n## Work done\n")
		budget := max(req.TargetTokens, 64) * 3 // bytes, about
		for _, f := range facts.Extract(msgs) {
			if rng.IntN(3) == 0 || b.Len()+len(f.Text) > budget {
				continue
			}
			b.WriteString("- " + f.Text + "\n")
		}
		b.WriteString("\n## Open tasks and next step\n- Continue with the user's request.")
		return llm.Response{Text: b.String(), FinishReason: "stop"}, nil
	}}
	return cascade.New(s.DB(), entry("third", third, cooldown)), nil
}

// Simulate replays msgs into Thread of s (a new store) at the given limit through summarizer
// kind. logf, if not nil, gets a line per failed compaction. It stops at the first compaction
// after which facts are lost unnamed, with a *LostError.
func Simulate(ctx context.Context, s *memory.Store, msgs []chat.Message, limit int, kind string, logf func(string, ...any)) (Stats, error) {
	return SimulateWith(ctx, s, msgs, limit, kind, Cooldown, logf)
}

// SimulateWith is Simulate with the summarizer's cooldown after a failure (see ProviderWith).
func SimulateWith(ctx context.Context, s *memory.Store, msgs []chat.Message, limit int, kind string, cooldown time.Duration, logf func(string, ...any)) (Stats, error) {
	var st Stats
	if logf == nil {
		logf = func(string, ...any) {}
	}
	p, err := ProviderWith(s, kind, uint64(limit), cooldown)
	if err != nil {
		return st, err
	}
	c := compact.New(s, p, compact.Settings{TokenLimit: limit})
	newestUser := ""
	for i, m := range msgs {
		if _, err := s.Append(ctx, Thread, []chat.Message{m}, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			return st, fmt.Errorf("append %d: %w", i, err)
		}
		st.Turns++
		if m.Role == "user" {
			newestUser = m.Text()
		}
		due, err := c.ShouldCompact(ctx, Thread)
		if err != nil {
			return st, err
		}
		if due {
			rep, err := c.Compact(ctx, Thread, compact.Options{})
			switch rep.Status {
			case memory.StatusApplied:
				st.Compactions++
				if err := check(ctx, s, &st, newestUser, fmt.Sprintf("after message %d, compaction %d", i+1, st.Compactions)); err != nil {
					return st, err
				}
			case memory.StatusFailed:
				st.Failed++
				logf("message %d: compaction failed: %v", i+1, err)
			}
		}
		a, err := s.Active(ctx, Thread)
		if err != nil {
			return st, err
		}
		st.TokensSum += a.Tokens
	}
	original, err := OriginalFacts(ctx, s, Thread)
	if err != nil {
		return st, err
	}
	a, err := s.Active(ctx, Thread)
	if err != nil {
		return st, err
	}
	named, err := NamedDropped(ctx, s, Thread)
	if err != nil {
		return st, err
	}
	for i, ok := range facts.Kept(original, ActiveText(a)) {
		f := original[i]
		write := f.Kind == facts.KindToolCall && f.Weight >= 60
		if f.Kind == facts.KindToolCall {
			st.Actions++
		} else {
			st.Facts++
		}
		if write {
			st.Writes++
		}
		switch {
		case ok:
			st.Kept++
			if write {
				st.WritesKept++
			}
		case named[f.Text]:
			st.Named++
			if write {
				st.WritesNamed++
			}
		default:
			st.Lost++
		}
	}
	return st, nil
}

// check asserts the guarantees of a life after one compaction.
func check(ctx context.Context, s *memory.Store, st *Stats, newestUser, when string) error {
	original, err := OriginalFacts(ctx, s, Thread)
	if err != nil {
		return err
	}
	lost, err := Losses(ctx, s, Thread, original)
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		e := &LostError{When: when}
		for _, f := range lost {
			e.Lost = append(e.Lost, f.Text)
		}
		reps, _ := s.Reports(ctx, Thread, 3)
		for _, r := range reps {
			e.Trail = append(e.Trail, fmt.Sprintf("compaction %d: %s %s %s, %d -> %d tokens, dropped %q, detail %s", r.ID, r.Status, r.Reason, r.Strategy, r.TokensBefore, r.TokensAfter, r.FactsDropped, r.Detail))
		}
		return e
	}
	a, err := s.Active(ctx, Thread)
	if err != nil {
		return err
	}
	if newestUser != "" && !strings.Contains(ActiveText(a), newestUser) {
		st.NewestUserMissing++
	}
	for _, e := range a.Entries {
		if e.CompactionID == 0 {
			continue
		}
		if _, err := summarycheck.Sections(e.Message.Text()); err != nil {
			st.SectionsBroken++
			if st.SectionsError == "" {
				st.SectionsError = fmt.Sprintf("%s: %v", when, err)
			}
		}
	}
	return nil
}

// ActiveText is the text of an active context as it shows facts, tool calls included: what the
// product wrote itself (a mask placeholder's sizes, a cut result's marker, a summary's header)
// is left out (compact.FactsText), so that no fact is found in it by coincidence.
func ActiveText(a memory.Active) string {
	var b strings.Builder
	for _, e := range a.Entries {
		b.WriteString(compact.FactsText(e) + "\n")
		for _, c := range e.Message.ToolCalls {
			b.WriteString(c.Function.Name + " " + c.Function.Arguments + "\n")
		}
	}
	return b.String()
}

// OriginalFacts returns the ledger of a thread's original messages, as appended.
func OriginalFacts(ctx context.Context, s *memory.Store, thread string) ([]facts.Fact, error) {
	hist, err := s.History(ctx, thread)
	if err != nil {
		return nil, err
	}
	msgs := make([]facts.Message, len(hist))
	for i, e := range hist {
		m := facts.Message{Role: e.Message.Role, Content: e.Message.Text(), Name: e.Message.Name, ToolCallID: e.Message.ToolCallID}
		for _, tc := range e.Message.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, facts.ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		msgs[i] = m
	}
	return facts.Extract(msgs), nil
}

// NamedDropped is the set of the values the thread's reports named in facts_dropped.
func NamedDropped(ctx context.Context, s *memory.Store, thread string) (map[string]bool, error) {
	reps, err := s.Reports(ctx, thread, 1<<20)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, r := range reps {
		for _, d := range r.FactsDropped {
			named[d] = true
		}
	}
	return named, nil
}

// Losses returns the facts of original that are neither in the thread's active context nor
// named in the facts_dropped of any of its compactions: the losses no report owns.
func Losses(ctx context.Context, s *memory.Store, thread string, original []facts.Fact) ([]facts.Fact, error) {
	a, err := s.Active(ctx, thread)
	if err != nil {
		return nil, err
	}
	named, err := NamedDropped(ctx, s, thread)
	if err != nil {
		return nil, err
	}
	var lost []facts.Fact
	for i, ok := range facts.Kept(original, ActiveText(a)) {
		if !ok && !named[original[i].Text] {
			lost = append(lost, original[i])
		}
	}
	return lost, nil
}

// Generated is a long agent thread of several tasks: constraints stated early, lookups and
// writes, errors the tools returned, a reply per task.
func Generated(tasks int) []chat.Message {
	msgs := []chat.Message{
		chat.TextMessage("system", "You are an airline agent. Use the tools to help the user."),
		chat.TextMessage("user", "I am mia_li_3668. I must never pay with my credit card: only gift cards, please."),
	}
	call := func(id, name string, args map[string]any) chat.Message {
		raw, _ := json.Marshal(args)
		m := chat.TextMessage("assistant", "")
		m.Content = nil
		m.ToolCalls = []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: string(raw)}}}
		return m
	}
	result := func(id, text string) chat.Message {
		m := chat.TextMessage("tool", text)
		m.ToolCallID = id
		return m
	}
	for k := range tasks {
		res := fmt.Sprintf("R%05dQ", k)
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Task %d: please move reservation %s to flight HAT%03d on 2024-06-%02d.", k, res, k%300, k%28+1)))
		id := fmt.Sprintf("call_%d_a", k)
		msgs = append(msgs, call(id, "get_reservation_details", map[string]any{"reservation_id": res}),
			result(id, fmt.Sprintf(`{"reservation_id": "%s", "flights": [{"flight_number": "HAT%03d", "date": "2024-05-%02d", "price": %d}], "passengers": [{"first_name": "Mia", "last_name": "Li"}], "payment_history": [{"payment_id": "gift_card_%d", "amount": %d}]}`,
				res, (k+7)%300, k%28+1, 100+k, 7000+k, 300+k)))
		id = fmt.Sprintf("call_%d_b", k)
		out := `{"status": "ok"}`
		if k%4 == 3 {
			out = "Error: payment amount does not add up"
		}
		msgs = append(msgs, call(id, "update_reservation_flights", map[string]any{"reservation_id": res, "cabin": "economy", "payment_id": fmt.Sprintf("gift_card_%d", 7000+k)}),
			result(id, out))
		reply := fmt.Sprintf("Reservation %s is now on flight HAT%03d.", res, k%300)
		if k%4 == 3 {
			reply = fmt.Sprintf("I could not update %s: the payment amount does not add up.", res)
		}
		msgs = append(msgs, chat.TextMessage("assistant", reply))
	}
	return msgs
}
