package compact

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// The strategies that need no provider, as pure functions over an active context's entries:
// mask replaces old tool results by placeholders, window leaves the oldest units out, and fit
// (on_failure: fit) does both and then cuts the newest unit's largest results until the view
// fits. None of them splits a call from its result, moves the pinned messages or touches the
// newest unit (but fit's last resort, which cuts its results' text, never its messages).

// shaper computes the views of mask, window and fit.
type shaper struct {
	count  tokencount.Counter
	redact func(string) string
	knobs  maskKnobs // the mask and turn knobs of maskOld (see maskknobs.go)
}

// maxDigestBytes bounds the digest of a masked result.
const maxDigestBytes = 200

// mask returns a copy of entries with the tool results of entries[from:to] masked, each one
// whose placeholder is smaller than it.
func (sh shaper) mask(entries []memory.Entry, from, to int) []memory.Entry {
	out := slices.Clone(entries)
	for i := from; i < to; i++ {
		e := out[i]
		if e.Message.Role != chat.RoleTool || e.CompactionID != 0 || (e.Mark() != nil && e.Mark().Masked != nil) {
			continue
		}
		text := e.Text()
		m := memory.Masked{Seq: e.Seq, Tool: toolName(out[:i], e.Message), Digest: sh.digest(e.Message, text),
			OrigTokens: e.Tokens, OrigBytes: len(text)}
		orig := text
		if e.Mark() != nil && e.Mark().Cut != nil {
			m.OrigTokens, orig = e.Mark().Cut.OrigTokens, e.Mark().Orig
		}
		masked := e.Marked(&memory.Mark{Masked: &m, Orig: orig})
		if m.Tokens = sh.count.CountMessage(masked.Message); m.Tokens >= e.Tokens {
			continue
		}
		masked.Tokens = m.Tokens
		out[i] = masked
	}
	return out
}

// digest is the one line a placeholder keeps of a result: the facts the ledger finds in it,
// most important first, else its first line; redacted.
func (sh shaper) digest(m chat.Message, text string) string {
	text = sh.redact(text)
	fs := facts.Extract([]facts.Message{{Role: chat.RoleTool, Content: text, Name: m.Name, ToolCallID: m.ToolCallID}})
	var parts []string
	n := 0
	for _, f := range factTexts(fs) {
		if n+len(f)+2 > maxDigestBytes {
			break
		}
		parts, n = append(parts, strings.ReplaceAll(f, "\n", " ")), n+len(f)+2
	}
	if len(parts) > 0 {
		return "facts: " + strings.Join(parts, "; ")
	}
	if line := firstLine(text, maxDigestBytes); line != "" {
		return "first line: " + line
	}
	return "(empty)"
}

// shownFacts returns the facts of the original of e, a masked or cut result, that text (what the
// view shows of it: the digest, the head and tail; redacted) still holds, with e's seq and
// entity. Read alone, that text may not show them as facts: a digest writes an amount as a
// bare number, a cut leaves a value without its key, so a summary of the view would lose
// them unnamed. The facts it does not hold were named when the view masked or cut e. Nil when
// e is neither masked nor cut.
func shownFacts(e memory.Entry, text, entity string, redact func(string) string) []facts.Fact {
	if e.Mark() == nil || e.Mark().Orig == "" {
		return nil
	}
	fs := facts.Extract([]facts.Message{{Role: e.Message.Role, Content: redact(e.Mark().Orig), Name: e.Message.Name, ToolCallID: e.Message.ToolCallID}})
	out := fs[:0]
	for i, ok := range facts.Kept(fs, text) {
		if ok {
			f := fs[i]
			f.Seq, f.Entity = int(e.Seq), entity
			out = append(out, f)
		}
	}
	return out
}

// toolName returns the name of the tool whose result m is: its name, else the function of the
// latest call with its id among before.
func toolName(before []memory.Entry, m chat.Message) string {
	if m.Name != "" {
		return m.Name
	}
	for i := len(before) - 1; i >= 0; i-- {
		for _, tc := range before[i].Message.ToolCalls {
			if tc.ID == m.ToolCallID {
				return tc.Function.Name
			}
		}
	}
	return "unknown tool"
}

// keptStart returns where the kept part of entries starts for a kept budget (pinned included):
// the newest unit, then whole units while they fit; pinned when the context is one unit.
func keptStart(entries []memory.Entry, keepBudget int) (pinned, start int) {
	pinned = memory.PinnedLen(entries)
	cuts := memory.Cuts(entries, pinned)
	if len(cuts) == 0 {
		return pinned, pinned
	}
	start, _ = keptFrom(entries, cuts, keepBudget-memory.EntryTokens(entries[:pinned]))
	return pinned, start
}

// maskOld masks the tool results outside the kept window (see keptStart).
func (sh shaper) maskOld(entries []memory.Entry, keepBudget int) []memory.Entry {
	if sh.knobs.knobbed() {
		return sh.maskKnobbed(entries, keepBudget)
	}
	pinned, start := keptStart(entries, keepBudget)
	return sh.mask(entries, pinned, start)
}

// window leaves the oldest whole units out: the pinned messages and the kept window remain,
// and the newest user message, a unit of its own, stays before the kept window when it would
// be left out (it is the question the newest unit answers), its tokens counted in the budget.
func window(entries []memory.Entry, keepBudget int) []memory.Entry {
	pinned, start := keptStart(entries, keepBudget)
	out := slices.Clone(entries[:pinned])
	if u := lastUser(entries); u >= pinned && u < start {
		out = append(out, entries[u])
		_, start = keptStart(entries, keepBudget-entries[u].Tokens)
	}
	return append(out, entries[start:]...)
}

// lastUser is the index of the newest user message of entries, -1 when there is none.
func lastUser(entries []memory.Entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Message.Role == chat.RoleUser && entries[i].CompactionID == 0 {
			return i
		}
	}
	return -1
}

// fit returns entries fitted within limit tokens: every tool result but the newest unit's
// masked, then the oldest units left out, then the newest unit's largest tool results cut.
// It fails when even that cannot fit (the pinned messages alone are over, for one).
func (sh shaper) fit(entries []memory.Entry, limit int) ([]memory.Entry, error) {
	pinned, newest := keptStart(entries, 0)
	out := sh.mask(entries, pinned, newest)
	if memory.PromptTokens(out) <= limit {
		return out, nil
	}
	out = window(out, limit-tokencount.ReplyPriming)
	if memory.PromptTokens(out) <= limit {
		return out, nil
	}
	return sh.cutLargest(out, memory.PinnedLen(out), limit, true)
}

// minCutBytes is the least a cut keeps of a result.
const minCutBytes = 64

// cutLargest cuts the largest tool results after the pinned messages, largest first, until
// entries fit within limit; then, as a last resort and when user is set, the newest user
// message (cut, it stays in the view).
func (sh shaper) cutLargest(entries []memory.Entry, pinned, limit int, user bool) ([]memory.Entry, error) {
	out := slices.Clone(entries)
	order := make([]int, 0, len(out))
	for i := pinned; i < len(out); i++ {
		if out[i].Message.Role == chat.RoleTool && out[i].Mark() == nil {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return out[b].Tokens - out[a].Tokens })
	if u := lastUser(out); user && u >= pinned && out[u].Mark() == nil {
		order = append(order, u)
	}
	for _, i := range order {
		over := memory.PromptTokens(out) - limit
		if over <= 0 {
			break
		}
		out[i] = sh.cut(out[i], max(out[i].Tokens-over, 0))
	}
	if t := memory.PromptTokens(out); t > limit {
		kept := fmt.Sprintf("the pinned messages (%d tokens)", memory.EntryTokens(out[:pinned]))
		if u := lastUser(out); !user && u >= 0 && out[u].Mark() == nil {
			// Not cut here: name it, it may be what keeps the context over (a long task statement).
			kept += fmt.Sprintf(", the newest user message (seq %d, %d tokens, left whole)", out[u].Seq, out[u].Tokens)
		}
		return out, fmt.Errorf("%w: %d tokens, limit %d, with every result of the newest unit cut: %s and the newest unit's messages alone keep it there",
			ErrOverLimit, t, limit, kept)
	}
	return out, nil
}

// cut returns e with its text cut (head and tail around a marker) to at most target tokens, or
// as short as a cut goes.
func (sh shaper) cut(e memory.Entry, target int) memory.Entry {
	text := e.Text()
	keep := len(text) * max(target, 1) / max(e.Tokens, 1)
	for ; ; keep = keep * 3 / 4 {
		keep = max(keep, minCutBytes)
		c := memory.Cut{Seq: e.Seq, Head: cutAt(text, keep*2/3), OrigTokens: e.Tokens}
		c.Tail = tailAt(text, keep-c.Head)
		cut := e.Marked(&memory.Mark{Cut: &c, Orig: text})
		c.Tokens = sh.count.CountMessage(cut.Message)
		if c.Tokens <= target || keep <= minCutBytes {
			if c.Tokens >= e.Tokens {
				return e
			}
			cut.Tokens = c.Tokens
			return cut
		}
	}
}

// viewFacts returns the ledger of what a view change took out of the active context (the
// messages of pre masked, cut or left out in post, and a summary left out) and the facts of it
// that post no longer holds. A summary left out gives its stored ledger, as when a summary
// folds it in (middleLedger): its text need not show its facts as facts (a constraint, a tool
// call), and the facts a report already named dropped are not named again.
func (c *Compactor) viewFacts(ctx context.Context, pre, post []memory.Entry) (ledger, dropped []facts.Fact, err error) {
	after := bySeq(post)
	var changed []memory.Entry
	for _, e := range pre {
		x, ok := after[e.Seq]
		if e.CompactionID != 0 {
			ok = slices.ContainsFunc(post, func(p memory.Entry) bool { return p.CompactionID == e.CompactionID })
		}
		if !ok || x.Mark() != e.Mark() {
			changed = append(changed, e)
		}
	}
	if len(changed) == 0 {
		return nil, nil, nil
	}
	all, _, err := c.middleLedger(ctx, changed, nil)
	if err != nil {
		return nil, nil, err
	}
	ledger, _ = needed(all)
	return ledger, missingFacts(ledger, nil, outsideText(post)), nil
}

// bySeq indexes the messages of a view by their seq.
func bySeq(view []memory.Entry) map[int64]memory.Entry {
	out := make(map[int64]memory.Entry, len(view))
	for _, e := range view {
		out[e.Seq] = e
	}
	return out
}

// unshownFacts returns the facts of the results post masks or cuts anew (pre shows them
// otherwise) that their own placeholder or cut does not show, even when some other message
// shows the same text (a tool call's arguments, say, that no ledger reads as that fact). A
// view that commits without a summary names them: no ledger is stored with it, and a later
// summary or window takes only what the placeholder shows (shownFacts), so each fact of the
// result is kept or named. (The summary of hybrid carries them in its ledger instead.)
func unshownFacts(pre, post []memory.Entry, redact func(string) string) []facts.Fact {
	after := bySeq(post)
	var out []facts.Fact
	for _, e := range pre {
		x, ok := after[e.Seq]
		if !ok || e.CompactionID != 0 || x.Mark() == nil || x.Mark() == e.Mark() {
			continue
		}
		own := entryFacts([]memory.Entry{e}, nil, redact, true)
		var gone []facts.Fact
		text := "" // a masked result shows its digest alone: its placeholder need not be redacted
		if x.Mark().Masked == nil {
			text = redact(x.Text())
		}
		for i, held := range facts.Kept(own, shownText(x, text, redact)) {
			if !held {
				gone = append(gone, own[i])
			}
		}
		out = facts.Merge(out, gone)
	}
	return out
}

// shownText is what e shows as facts, text being its text as the caller reads it (redacted or
// not): what the product wrote itself is left out, never a fact. A masked result shows its
// digest (redacted), not the placeholder's call id, tool and sizes; a cut one its head and tail,
// not the marker's byte count; a summary its body, not the header naming the range it covers.
// The ledger (entryFacts, unshownFacts) and the facts checks (outsideText, the summary's check)
// read entries by this one rule, so what one counts the other finds.
func shownText(e memory.Entry, text string, redact func(string) string) string {
	switch {
	case e.Mark() != nil && e.Mark().Masked != nil:
		return redact(e.Mark().Masked.Digest)
	case e.Mark() != nil && e.Mark().Cut != nil:
		return memory.StripCutMarkers(text)
	case e.CompactionID != 0:
		return summaryBody(text)
	}
	return text
}

// FactsText returns the text entry e shows as facts, what a facts check reads of it: its text
// without what the product wrote itself (a masked result's digest, not its placeholder; a cut
// result's head and tail, not the marker; a summary's body, not its header).
func FactsText(e memory.Entry) string {
	return shownText(e, e.Text(), func(s string) string { return s })
}

// cutAt returns the largest n <= max such that s[:n] ends on a rune boundary.
func cutAt(s string, max int) int {
	n := min(max, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// tailAt returns the largest n <= max such that s[len(s)-n:] starts on a rune boundary.
func tailAt(s string, max int) int {
	n := min(max, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[len(s)-n]) {
		n--
	}
	return n
}

// firstLine returns the first non-blank line of s, at most max bytes.
func firstLine(s string, max int) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > max {
				return line[:cutAt(line, max)] + "..."
			}
			return line
		}
	}
	return ""
}
