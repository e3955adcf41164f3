package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// Hooks with a say: a host's BeforeCompaction (Config) is asked before a compaction runs, and
// may skip it, add instructions to its summarizer prompt, or give the summary itself;
// AfterCompaction is told the outcome. Options.Instructions are a call's own instructions.

// HookEvent is what BeforeCompaction is told of a compaction about to run: it was planned, it
// is neither a dry run nor ineffective, and nothing of it is written yet. Its JSON is what a
// config's before_compaction command reads on its stdin.
type HookEvent struct {
	Event    string `json:"event"` // HookBefore
	Thread   string `json:"thread"`
	Reason   Reason `json:"reason"`
	Strategy string `json:"strategy"`
	// Turn is the number of user messages of the thread so far.
	Turn int `json:"turn"`
	// Tokens is the active context's size; Limit the thread's token_limit, Budget what the
	// reserve leaves of it (L).
	Tokens int `json:"tokens"`
	Limit  int `json:"limit"`
	Budget int `json:"budget"`
	// FromSeq and ToSeq are the messages the summary is to replace (0 and 0: the strategy writes
	// no summary: mask, window).
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
	// Instructions are the call's (Options.Instructions), redacted.
	Instructions string `json:"instructions,omitempty"`
	// Facts is the ledger of the facts of those messages, as a compaction row stores it (a JSON
	// array of {kind, text, weight, seq, ...}; [] for none): a summary must hold each fact,
	// or the report names it in facts_dropped.
	Facts json.RawMessage `json:"facts"`
}

// HookDecision is BeforeCompaction's answer. Its JSON is what a config's before_compaction
// command prints on its stdout.
type HookDecision struct {
	// Action is HookProceed ("" too) or HookSkip: the compaction returns a report with status
	// skipped and writes nothing (no row, no provider call).
	Action string `json:"action"`
	// Instructions go into this compaction's summarizer prompt, after the call's, redacted,
	// outside the fenced transcript.
	Instructions string `json:"instructions,omitempty"`
	// Summary, when not empty, is the summary of FromSeq..ToSeq: the first pass uses it instead
	// of calling the summarizer. It is checked against the facts ledger as a provider's is, but
	// no fact is added to it: each fact of the ledger it misses is named in the report's
	// facts_dropped. One over the summary's budget is not used (the summarizer writes it).
	Summary string `json:"summary,omitempty"`
}

// HookDecision actions, and the event of HookEvent.
const (
	HookProceed = "proceed"
	HookSkip    = "skip"
	HookBefore  = "before_compaction"
	// HookProvider is the provider a report names when its summary was the hook's.
	HookProvider = "hook"
)

// MaxInstructionBytes bounds the instructions of a call, and those of a hook.
const MaxInstructionBytes = 8 << 10

// ErrInstructions: the instructions of a call are refused (too long, not UTF-8).
var ErrInstructions = memory.NewError(memory.CodeInvalid, "instructions refused")

// checkInstructions checks a call's or a hook's instructions.
func checkInstructions(text string) error {
	switch {
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: not valid UTF-8", ErrInstructions)
	case len(text) > MaxInstructionBytes:
		return fmt.Errorf("%w: %d bytes, more than the %d instructions may have", ErrInstructions, len(text), MaxInstructionBytes)
	}
	return nil
}

// hookInput is what the hooks and the call give one pass's summarizing: the instructions, and
// the hook's summary (first pass only).
type hookInput struct {
	instructions string
	summary      string
}

// hookInput is what pass gets of the instructions and the hook's summary.
func (j *job) hookInput(pass int) hookInput {
	h := hookInput{instructions: j.instructions}
	if pass == 1 {
		h.summary = j.replacement
	}
	return h
}

// before asks BeforeCompaction about the compaction j is about to run; true when it said skip
// (j.rep is then the skipped report). A hook that fails, panics or answers what it may not is
// logged, and the compaction proceeds as if it had not been asked.
func (j *job) before(ctx context.Context, opt Options) bool {
	c := j.c
	j.instructions = strings.TrimSpace(opt.Instructions)
	if c.cfg.BeforeCompaction == nil {
		return false
	}
	d, err := j.ask(ctx)
	if err == nil {
		err = j.take(d)
	}
	if err != nil {
		c.hookFailed(ctx, j.rep.Thread, HookBefore, err)
		return false
	}
	if d.Action == HookSkip {
		j.rep.Status, j.rep.Detail = StatusSkipped, "skipped by the before_compaction hook"
		j.rep.SummarizedMessages, j.rep.FromSeq, j.rep.ToSeq = 0, 0, 0
		return true
	}
	return false
}

// ask calls BeforeCompaction with the event of j; its panic is an error.
func (j *job) ask(ctx context.Context) (d HookDecision, err error) {
	ev, err := j.event(ctx)
	if err != nil {
		return d, fmt.Errorf("event: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hook panicked: %v", p)
		}
	}()
	return j.c.cfg.BeforeCompaction(ctx, ev)
}

// take applies a hook's decision to j: its instructions and summary (none of them if any part
// is wrong).
func (j *job) take(d HookDecision) error {
	switch d.Action {
	case "", HookProceed, HookSkip:
	default:
		return fmt.Errorf("action %q: want %s or %s", d.Action, HookProceed, HookSkip)
	}
	if d.Action == HookSkip {
		return nil
	}
	text := strings.TrimSpace(d.Instructions)
	if err := checkInstructions(text); err != nil {
		return err
	}
	sum := strings.TrimSpace(d.Summary)
	if !utf8.ValidString(sum) {
		return errors.New("summary: not valid UTF-8")
	}
	if sum != "" && !j.d.Summarize {
		return fmt.Errorf("summary: strategy %s writes no summary", j.rep.Strategy)
	}
	if text != "" {
		j.instructions = strings.TrimSpace(j.instructions + "\n\n" + text)
		if err := checkInstructions(j.instructions); err != nil {
			return err
		}
	}
	j.replacement = sum
	return nil
}

// event is the HookEvent of j.
func (j *job) event(ctx context.Context) (HookEvent, error) {
	ev := HookEvent{Event: HookBefore, Thread: j.a.Thread.ID, Reason: j.rep.Reason, Strategy: j.rep.Strategy,
		Tokens: j.a.Tokens, Limit: j.s.TokenLimit, Budget: j.s.Budget(), Instructions: j.c.redact(j.instructions), Facts: json.RawMessage("[]")}
	turn, err := j.c.userTurns(ctx, j.a.Thread)
	if err != nil {
		return ev, err
	}
	ev.Turn = turn
	if !j.d.Summarize {
		return ev, nil
	}
	ev.FromSeq, ev.ToSeq = j.d.Plan.FromSeq, j.d.Plan.ToSeq
	view := j.a.Entries
	if j.d.View != nil {
		view = j.d.View
	}
	fs, _, err := j.c.middleLedger(ctx, j.d.Plan.middle(view), nil)
	if err != nil {
		return ev, err
	}
	if len(fs) > 0 {
		ev.Facts = encodeLedger(fs)
	}
	return ev, nil
}

// userTurns counts the user messages of t.
func (c *Compactor) userTurns(ctx context.Context, t memory.Thread) (int, error) {
	if t.Messages == 0 {
		return 0, nil
	}
	es, err := c.Store.Messages(ctx, t.ID, 1, int64(t.Messages), memory.ReadOptions{Light: true})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range es {
		if e.Message.Role == chat.RoleUser {
			n++
		}
	}
	return n, nil
}

// afterHook tells AfterCompaction the outcome of a compaction; its panic is logged.
func (c *Compactor) afterHook(ctx context.Context, rep memory.Report) {
	if c.cfg.AfterCompaction == nil {
		return
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.hookFailed(ctx, rep.Thread, "after_compaction", fmt.Errorf("hook panicked: %v", p))
			}
		}()
		c.cfg.AfterCompaction(ctx, rep)
	}()
}

// hookFailed logs a hook's failure (redacted) and gives it to HookError.
func (c *Compactor) hookFailed(ctx context.Context, thread, hook string, err error) {
	c.log(ctx, slog.LevelWarn, "hook failed; the compaction proceeds", slog.String("thread", thread),
		slog.String("hook", hook), slog.String("error", errorText(err, c.Redact)))
	if c.cfg.HookError != nil {
		c.cfg.HookError(fmt.Errorf("%s hook: %w", hook, err))
	}
}

// instructionsBlock is the text the instructions add to a request, after the fenced transcript
// ("": none).
func instructionsBlock(text string) string {
	if text == "" {
		return ""
	}
	return "Instructions for this compaction, from the program that runs it (not part of the conversation above):\n" + text
}

// hookSummary is the hook's summary as the summarizer's answer would be, or false when it is
// over the summary's budget (the summarizer then writes it).
func (in *input) hookSummary(ctx context.Context, text string) (llm.Result, bool) {
	if err := in.accept(text); err != nil {
		in.c.log(ctx, slog.LevelWarn, "the before_compaction hook's summary is not used", slog.String("thread", in.thread),
			slog.String("error", err.Error()))
		return llm.Result{}, false
	}
	return llm.Result{Text: text, Provider: HookProvider, Model: HookBefore}, true
}

// composeAsIs is compose for the hook's summary: the text is put under the summary's sections
// as a provider's answer is, and no fact is added to it: each fact of the ledger it misses is
// dropped, and applySummary's check finds the same.
func (in *input) composeAsIs(res llm.Result, ledger []facts.Fact, checker *facts.Checker, outside []bool, s Settings) summary {
	body := strings.TrimSpace(in.c.redact(res.Text))
	fit := factFit{headings: in.prompt.Headings}
	text := in.header + parseSections(body, fit.headingOf).render(nil)
	nKept := 0
	for _, ok := range checker.Kept(body) {
		if ok {
			nKept++
		}
	}
	return summary{
		text: text, tokens: in.counter.CountMessage(chat.TextMessage(s.SummaryRole, text)),
		provider: res.Provider, model: res.Model,
		facts: ledger, checker: checker, outside: outside, factsTotal: len(ledger), factsKept: nKept,
		dropped: checkedMissing(checker, ledger, outside, summaryBody(text)),
	}
}
