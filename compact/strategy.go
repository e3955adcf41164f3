package compact

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/memcascade/memcascade/memory"
)

// A Strategy decides what a compaction does to a thread's active context: which view it
// leaves (tool results masked, the oldest units left out) and whether, and what, it
// summarizes. Each built-in strategy is a file of this package (strategy_summarize.go,
// strategy_mask.go, strategy_hybrid.go, strategy_window.go, strategy_queue.go), registered in one line below; a
// program registers its own with Register and names it in the settings (strategy: NAME).
//
// Whatever a strategy decides, the engine keeps the invariants of every compaction: the
// pinned messages and the newest unit stay, a call never leaves its result, the summary's facts
// are checked against the thread's ledger, history is never touched, and revert undoes it.
type Strategy interface {
	// Name is the strategy's name in settings and reports.
	Name() string
	// Decide plans a compaction: a pure function of its input, no provider called, nothing
	// written.
	Decide(in StrategyInput) Decision
}

// StrategyInput is what a strategy decides on.
type StrategyInput struct {
	// Entries are the active context, the pinned messages leading (see memory.PinnedLen).
	Entries []memory.Entry
	// Settings are the compaction's, filled; Keep the kept budget (L * target_ratio).
	Settings Settings
	Keep     int
	// MaskOld returns entries with the tool results outside the newest keep tokens replaced by
	// placeholders (the mask strategy's view), counted and redacted as the engine does.
	MaskOld func(entries []memory.Entry, keep int) []memory.Entry
}

// Decision is what a compaction will do.
type Decision struct {
	// View is the active context a compaction that changes the view leaves (masked, left out);
	// nil for one that only summarizes. For one that does both, the summary is planned on it.
	View []memory.Entry
	// Plan is the summary pass's, when Summarize is set (MakePlan).
	Plan      Plan
	Summarize bool
	// Ineffective: the compaction would not save enough; Why says why.
	Ineffective bool
	Why         string
	// Again asks for one more compaction of the thread once this one is applied, decided
	// afresh on the context it leaves (queue folds its two oldest summaries first, then
	// summarizes the new messages). Compact returns the last one's report; each is a report
	// of its own, reverted on its own.
	Again bool
}

// The built-in strategies, one line each, in the order they are listed.
func init() {
	for _, s := range []Strategy{summarizeStrategy{}, maskStrategy{}, hybridStrategy{}, windowStrategy{}, queueStrategy{}} {
		Register(s)
		builtins = append(builtins, s.Name())
	}
}

var (
	strategiesMu sync.RWMutex
	strategies   = map[string]Strategy{}
	builtins     []string // the built-in strategies, in the order they are listed
)

// Register makes s a strategy settings may name. It panics when s's name is empty or taken,
// as database/sql's Register does: registering is a program's setup, not its input.
func Register(s Strategy) {
	strategiesMu.Lock()
	defer strategiesMu.Unlock()
	name := s.Name()
	if name == "" || strings.ContainsAny(name, " \t\n") {
		panic(fmt.Sprintf("compact: Register of a strategy named %q", name))
	}
	if _, dup := strategies[name]; dup {
		panic("compact: Register called twice for strategy " + name)
	}
	strategies[name] = s
}

// strategyNamed returns the strategy registered under name.
func strategyNamed(name string) (Strategy, bool) {
	strategiesMu.RLock()
	defer strategiesMu.RUnlock()
	s, ok := strategies[name]
	return s, ok
}

// Strategies lists the names of the registered strategies: the built-in ones (summarize, mask,
// hybrid, window, queue), then the program's in name order.
func Strategies() []string {
	strategiesMu.RLock()
	defer strategiesMu.RUnlock()
	out := slices.Clone(builtins)
	var own []string
	for name := range strategies {
		if !slices.Contains(builtins, name) {
			own = append(own, name)
		}
	}
	slices.Sort(own)
	return append(out, own...)
}

// checkPlan refuses a strategy's plan whose Stay breaks the view it leaves: each must be a
// summary entry between the pinned messages and the kept part, none the held one, and no
// summary's range may meet the new summary's.
func checkPlan(name string, entries []memory.Entry, p Plan) error {
	for k, i := range p.Stay {
		if i < p.Pinned || i >= p.Kept || (p.Hold && i == p.HeldAt) || entries[i].CompactionID == 0 || (k > 0 && i <= p.Stay[k-1]) {
			return fmt.Errorf("strategy %s: its plan keeps entry %d, which is not an earlier summary before the kept part (in order)", name, i)
		}
		if p.MiddleLen() > 0 && overlaps(entries[i], p.FromSeq, p.ToSeq) {
			return fmt.Errorf("strategy %s: its plan keeps the summary of compaction %d (seq %d-%d), which the new summary's range %d-%d meets",
				name, entries[i].CompactionID, entries[i].CoversFrom, entries[i].CoversTo, p.FromSeq, p.ToSeq)
		}
	}
	return nil
}

// checkView refuses a strategy's view that breaks an invariant of every compaction: it must keep
// the pinned messages and the newest unit of entries as they are, hold only entries of entries
// in their order, and never keep a tool result without the message that called it.
func checkView(name string, entries, view []memory.Entry) error {
	key := func(e memory.Entry) [2]int64 { return [2]int64{e.Seq, e.CompactionID} }
	pinned := memory.PinnedLen(entries)
	newest := pinned
	if cuts := memory.Cuts(entries, pinned); len(cuts) > 0 {
		newest = cuts[len(cuts)-1]
	}
	if len(view) < pinned+len(entries)-newest {
		return fmt.Errorf("strategy %s: its view leaves out pinned messages or the newest unit", name)
	}
	for i := range pinned {
		if key(view[i]) != key(entries[i]) {
			return fmt.Errorf("strategy %s: its view does not keep the pinned messages first", name)
		}
	}
	tail := view[len(view)-(len(entries)-newest):]
	for i, e := range entries[newest:] {
		if key(tail[i]) != key(e) {
			return fmt.Errorf("strategy %s: its view does not end with the newest unit", name)
		}
	}
	at, called := 0, map[string]bool{}
	for _, v := range view {
		for at < len(entries) && key(entries[at]) != key(v) {
			at++
		}
		if at == len(entries) {
			return fmt.Errorf("strategy %s: its view holds a message the active context does not, or out of order", name)
		}
		for _, c := range v.Message.ToolCalls {
			called[c.ID] = true
		}
		if v.Message.Role == "tool" && !called[v.Message.ToolCallID] {
			return fmt.Errorf("strategy %s: its view keeps the tool result of call %s without the call", name, v.Message.ToolCallID)
		}
		at++
	}
	return nil
}
