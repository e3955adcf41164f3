package serve

import (
	"context"
	"fmt"
	"slices"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// unfit is a request whose messages cannot fit the thread's limit whatever a compaction does:
// what stays of them in the active context, whole, is over it. It is refused before anything
// is stored.
type unfit struct {
	instructions, unit, tools, budget, limit int
	userWhole                                bool // the newest user message is counted whole (on_failure: keep)
	atLeast                                  bool // a message was counted by its words, a floor of its tokens
}

func (e *unfit) Error() string {
	what := "the request's newest messages, tool results aside"
	if e.userWhole {
		what += " and its newest user message whole"
	}
	fix := "no compaction makes room for them, not even with compaction.on_failure: fit"
	if e.userWhole {
		fix = "no compaction makes room for them; compaction.on_failure: fit would cut the newest user message in what the model gets"
	}
	least := ""
	if e.atLeast {
		least = "at least "
	}
	return fmt.Sprintf("the request's instructions (%d tokens) and %s (%s%d tokens), which every compaction keeps, are %s%d tokens (tools %d more): "+
		"over the thread's limit of %d (%d with the reserve); %s; nothing was stored",
		e.instructions, what, least, e.unit, least, e.instructions+e.unit, e.tools, e.budget, e.limit, fix)
}

// refuseUnfit returns an *unfit when the request's messages cannot fit the thread's limit
// whatever a compaction does (see floorTokens), before anything of it is stored: a request
// refused stores nothing, and leaves no thread behind. Settings that do not resolve, or a
// model without a counter, are not its to report (nil: the turn goes on and says why).
// The caller holds the thread's turn.
func (s *Server) refuseUnfit(ctx context.Context, st *threadState, req dialect.Turn, reset bool) (*unfit, error) {
	if len(req.Messages) == 0 {
		return nil, nil
	}
	lv, err := s.live(ctx, st, false)
	if err != nil {
		return nil, err
	}
	over, _ := s.limits(ctx, lv.ts, req.Model, 0)
	set, err := compact.Resolve(s.Compactor.Settings, lv.ts, over)
	if err != nil {
		return nil, nil
	}
	var counter tokencount.Counter
	if lv.ver.Found {
		counter, err = s.Store.Counter(lv.active.Thread.Encoding)
	} else {
		counter, err = s.Store.NewThreadCounter(req.Model)
	}
	if err != nil {
		return nil, nil
	}
	tools := s.countTools(counter, req)
	// The request's leading instructions stay pinned when they start the thread (a new
	// thread, a reset) or are its current ones (counted as stored); changed instructions may
	// find no room for their pin, and are then the history a compaction summarizes.
	p, instr := leadingSystem(req.Messages), 0
	if cur := currentInstructions(lv.active); lv.ver.Found && !reset {
		if sameInstructions(req.Messages[:p], cur) {
			for _, e := range cur {
				instr += e.Tokens
			}
		}
	} else {
		for _, m := range req.Messages[:p] {
			instr += counter.CountMessage(m)
		}
	}
	keepUser := set.OnFailure != compact.OnFailureFit
	count, atLeast := counter.CountMessage, false
	if slices.Contains(tokencount.Encodings(), counter.Encoding()) {
		// A message far over the limit is not tokenized to say so (a 30 MB message is 57 MB
		// of the tokenizer's garbage): its words are a floor of its tokens.
		count = func(m chat.Message) int {
			if len(m.Content) > wordFloorBytes && m.Content[0] == '"' { // a string, not parts
				if n := words(m.Content); n > set.TokenLimit {
					atLeast = true
					return n
				}
			}
			return counter.CountMessage(m)
		}
	}
	unit := floorTokens(req.Messages, p, keepUser, count)
	if set.Fits(instr+unit+tokencount.ReplyPriming, tools) {
		return nil, nil
	}
	return &unfit{instructions: instr, unit: unit + tokencount.ReplyPriming, tools: tools, budget: set.Budget(), limit: set.TokenLimit,
		userWhole: keepUser, atLeast: atLeast}, nil
}

// wordFloorBytes is the size of a message's content from which its words are counted first.
const wordFloorBytes = 64 << 10

// words returns the runs of characters other than ASCII whitespace in a message's content, a
// JSON string as its JSON holds it. It is a floor of the tokens of the content under the built-in encodings:
// their pre-tokenizers never put two runs that whitespace separates in one piece, and each
// piece is a token at least; an escape (\n, \u0020) in the JSON is counted as what it is
// not, whitespace, so it can only join two runs, never split one.
func words(raw []byte) int {
	n, in := 0, false
	for _, c := range raw {
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// floorTokens returns the tokens of the messages of msgs after its first from (its leading
// instructions) that stay whole in the active context whatever a compaction does, as
// compact's rules keep them: the newest unit (memory.Cuts: the messages from the last place
// a kept part may start) is always kept, but a compaction may cut its tool results down to a
// few bytes, and, under on_failure fit, the newest user message too; under on_failure keep
// (keepUser) the newest user message is kept whole, in the newest unit or held before it.
// It is a floor: what else stays (pinned messages of the thread, a summary) is not counted.
func floorTokens(msgs []chat.Message, from int, keepUser bool, count func(chat.Message) int) int {
	u := newestUnit(msgs, from)
	user := -1
	for i := len(msgs) - 1; i >= from; i-- {
		if msgs[i].Role == chat.RoleUser {
			user = i
			break
		}
	}
	n := 0
	for i := u; i < len(msgs); i++ {
		if msgs[i].Role == chat.RoleTool || i == user && !keepUser {
			continue
		}
		n += count(msgs[i])
	}
	if keepUser && user >= from && user < u {
		n += count(msgs[user])
	}
	return n
}

// newestUnit returns where the newest unit of msgs[from:] starts, as the last cut of
// memory.Cuts: the latest message after from that is not a tool result and that no result at
// or after it answers a call made before it (from when there is none). A call with no result
// is not looked for: the unit found is then the same or shorter, never longer.
func newestUnit(msgs []chat.Message, from int) int {
	pending := map[string]int{} // results at or after i whose calls are before i
	for i := len(msgs) - 1; i > from; i-- {
		m := msgs[i]
		for _, c := range m.ToolCalls {
			if pending[c.ID] > 0 {
				if pending[c.ID]--; pending[c.ID] == 0 {
					delete(pending, c.ID)
				}
			}
		}
		if m.Role == chat.RoleTool {
			if m.ToolCallID != "" {
				pending[m.ToolCallID]++
			}
			continue
		}
		if len(pending) == 0 {
			return i
		}
	}
	return from
}

// dropRefused forgets what the turn of a refused request kept: its messages as the thread's
// latest request (the next one is parsed without them), and the state of a thread that does
// not exist (nothing of it stays once the request ends). The caller holds the thread's turn.
func (s *Server) dropRefused(st *threadState, req dialect.Turn) {
	if lv := st.lv; lv != nil && !lv.ver.Found {
		s.keepLive(st, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.sent == req.Sent {
		s.cached -= st.sentSize
		st.sent, st.sentSize, st.sentMsgs = nil, 0, 0
	}
}
