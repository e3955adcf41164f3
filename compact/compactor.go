// Package compact is the compaction engine of memcascade: it keeps a thread's active context
// inside its model's window. A compaction plans on the active context (MakePlan), masks or cuts
// tool results and summarizes the oldest part through a Summarizer (a provider cascade, given to
// it), checks the summary against the ledger of facts it must keep, and commits the result
// through the store's writer (memory.Store.Compactions), which records the report.
//
// The store, its threads, settings, pins, views and reports are package memory's; compact
// reaches the database only through it.
package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/redact"
)

// Summarizer writes summaries: it runs a task against its providers, in order, until one
// succeeds. cascade.Cascade satisfies it.
type Summarizer interface {
	Run(ctx context.Context, compactionID int64, task llm.Task) (llm.Result, error)
}

// Errors of Compact.
var (
	// ErrOverLimit: after compaction the active context is still over the token limit.
	ErrOverLimit = memory.NewError(memory.CodeOverLimit, "active context still over the token limit")
	// ErrSummarize: no provider could write the summary; the originals are kept.
	ErrSummarize = memory.NewError(memory.CodeUnavailable, "summarization failed")
	// ErrFactsLost: a summary about to be committed misses facts it does not report as
	// dropped; it is not committed (a defect of the compactor, never of a provider).
	ErrFactsLost = errors.New("facts check failed")
)

// Compactor keeps threads inside their model's context window. Build it with New or NewWith;
// it does not change once built. Its exported fields are there to read.
type Compactor struct {
	Store      *memory.Store
	Summarizer Summarizer
	Settings   Settings
	// Redact is applied to every text that leaves the machine (the summarizer's input, each
	// fact of the ledger) and to the summary and error text before they are stored: Config.Redact,
	// else redact.Default. It is called from several goroutines at once (a long middle is
	// redacted by one per CPU).
	Redact func(string) string

	cfg Config
}

// Config is what a compactor is given besides its store, summarizer and settings (NewWith).
// Every field is optional.
type Config struct {
	// Redact redacts every text that leaves the machine and every text stored (see
	// Compactor.Redact). nil: redact.Default, the built-in secret patterns. Give the redactor
	// the summarizer stores its errors with, so that what the compactor sends and what the
	// cascade stores pass one redactor (config.NewCompactor does).
	Redact func(string) string
	// Pace returns the time the summarizer takes to read and write tokens tokens at the speed
	// its providers were measured at, false when unknown (cascade.Cascade.TimeFor): an
	// emergency compaction gives its summarizing that time when it exceeds EmergencyTimeout.
	// nil: EmergencyTimeout.
	Pace func(ctx context.Context, tokens int) (time.Duration, bool)
	// Logger, when set, receives a record when a compaction starts and when it ends, with the
	// keys thread, compaction_id, reason, strategy, outcome, provider, model, tokens_before,
	// tokens_after, duration_ms and error (redacted). nil: silent.
	Logger *slog.Logger
	// Progress receives progress events (nil: none).
	Progress func(Progress)
	// OnReport is called with the report of every compaction that reached a decision (not
	// dry runs). Its error or panic never fails the compaction; it goes to HookError.
	OnReport func(context.Context, memory.Report) error
	// OnSummarized is called after a summary was applied, with the messages it replaced, for
	// hosts that keep long-term memory elsewhere. Its error or panic goes to HookError.
	OnSummarized func(context.Context, Span) error
	// HookError receives the errors of OnReport, OnSummarized, BeforeCompaction and
	// AfterCompaction (nil: dropped).
	HookError func(error)
	// BeforeCompaction is asked before a compaction runs (not a dry run, not an ineffective
	// one): it may skip it, add instructions to its prompt or give its summary (see hooks.go).
	// Its error or panic is logged and the compaction proceeds.
	BeforeCompaction func(context.Context, HookEvent) (HookDecision, error)
	// Summarizers are the summarizers of one's own, by name, that a compaction's settings may
	// name as its Cascade or PartCascade (see cascades.go); the compactor's Summarizer is the
	// one named DefaultCascade. config.Config.NewCompactor gives it the config's cascades.
	Summarizers map[string]Summarizer
	// AfterCompaction is told the report of every compaction that reached a decision, skipped
	// and held ones included. Its panic is logged.
	AfterCompaction func(context.Context, memory.Report)
}

// Span is what one pass of a compaction summarized.
type Span struct {
	Thread       string
	CompactionID int64
	// Messages are the entries the summary replaced (a previous summary among them has
	// CompactionID set).
	Messages []memory.Entry
	Summary  string
	// Facts is the ledger of the facts of Messages (see package facts).
	Facts []facts.Fact
}

// Progress is a step of a running compaction.
type Progress struct {
	Thread   string
	Pass     int
	Provider string
	Chunk    int // 1-based chunk being summarized
	Chunks   int
	Message  string
}

// Options change one Compact call.
type Options struct {
	// Force compacts even under the trigger, and even when the last compaction saw no new
	// messages since.
	Force bool
	// DryRun returns the plan as a "planned" report: no provider is called, nothing is written.
	DryRun bool
	// Override are settings of this call only: those it sets win over the thread's.
	Override ThreadSettings
	// Emergency compacts with reason emergency whatever the context's size (a proxy whose
	// upstream refused a request as too long): the cheapest path that gets under the target.
	Emergency bool
	// Requested is a compaction the agent's model asked for (memory_compact): it runs as a
	// forced one, recorded with reason requested, and keeps at most target_ratio of the
	// context as it is (not of the limit): what is older is summarized however small the
	// context.
	Requested bool
	// Instructions go into this compaction's summarizer prompt, redacted, after the fenced
	// transcript (at most MaxInstructionBytes).
	Instructions string

	// again counts the compactions this call chained (Decision.Again); reason is the first's.
	again  int
	reason Reason
}

// New returns a Compactor with the given settings and the default Config: the built-in
// redactor, no pace, no logger, progress or hooks.
func New(store *memory.Store, summarizer Summarizer, s Settings) *Compactor {
	return NewWith(store, summarizer, s, Config{})
}

// NewWith returns a Compactor with the given settings and cfg. The compactor reads the
// store's clock (memory.Store.Now); a summarizer that keeps time of its own (a
// *cascade.Cascade: its cooldowns and attempts) is built on the same clock
// (cascade.Options.Now), so that the whole system keeps one clock.
func NewWith(store *memory.Store, summarizer Summarizer, s Settings, cfg Config) *Compactor {
	red := cfg.Redact
	if red == nil {
		red = redact.Default()
	}
	return &Compactor{Store: store, Summarizer: summarizer, Settings: s, Redact: red, cfg: cfg}
}

// ShouldCompact reports whether an unforced Compact of the thread would do anything: its
// active context is over L, or it is over L * trigger_ratio and automatic compaction is not
// waiting (it waits when the latest applied or ineffective compaction ran with the same limit,
// reserve and ratios and saw every message). It reads stored counts only, so it is cheap to
// call after every turn.
func (c *Compactor) ShouldCompact(ctx context.Context, thread string) (bool, error) {
	t, err := c.Store.Thread(ctx, thread)
	if err != nil {
		return false, err
	}
	ts, err := ParseThreadSettings(t.ID, t.Settings)
	if err != nil {
		return false, err
	}
	s, err := Resolve(c.Settings, ts, ThreadSettings{})
	if err != nil {
		return false, fmt.Errorf("thread %q: %w", thread, err)
	}
	why, err := c.notNeeded(ctx, t, t.ActiveTokens, s)
	if why == "" && err == nil { // a held thread is not due (see Held)
		why, err = Held(ctx, c.Store, t, s)
	}
	return why == "", err
}

// SettingsFor returns the settings a compaction of thread uses, merged, filled with the
// defaults and validated once: override (a call's, Options.Override, memctl's flags) wins over
// the thread's stored settings, which win over c.Settings (the config file), which win over the
// built-in defaults (see Resolve). Compact, memctl and memctl serve take their settings
// from here or from Resolve; what they get is filled, so MakePlan and Budget need no
// defaults of their own.
func (c *Compactor) SettingsFor(ctx context.Context, thread string, override ThreadSettings) (Settings, error) {
	ts, err := ThreadSettingsOf(ctx, c.Store, thread)
	if err != nil {
		return Settings{}, err
	}
	return Resolve(c.Settings, ts, override)
}

// Pin pins message seq of a thread as memory.Store.Pin does, checked against the settings this
// compactor would compact the thread with.
func (c *Compactor) Pin(ctx context.Context, thread string, seq int64) (memory.Pinned, error) {
	return c.Store.Pin(ctx, thread, seq, PinBudget(c.Settings))
}

// PinBudget is the budget a pin of a thread is checked against (memory.Store.Pin): the
// thread's settings over base, fitted in the window a host learned for it (ThreadSettings.Window)
// when that is below the limit the thread would have without it, since a pin that fits the
// config's default limit but not the model's window would leave every later turn over the
// limit. The thread's own token_limit wins.
func PinBudget(base Settings) func(settings json.RawMessage) (budget, room int, err error) {
	return func(raw json.RawMessage) (int, int, error) {
		ts, err := ParseThreadSettings("", raw)
		if err != nil {
			return 0, 0, err
		}
		var over ThreadSettings
		if w := ts.Window; ts.TokenLimit == nil && w != nil && w.Limit > 0 && w.Limit < Effective(base, ts, ThreadSettings{}).TokenLimit {
			over = LimitOverride(base, ts, w.Limit)
		}
		s := Effective(base, ts, over)
		return s.Budget(), s.MinSummaryTokens(), nil
	}
}

// notNeeded returns why an unforced compaction of the thread would do nothing, "" when it is
// due. A context over L is always due: it compacts, or fails saying why it cannot.
func (c *Compactor) notNeeded(ctx context.Context, t memory.Thread, tokens int, s Settings) (string, error) {
	if tokens > s.Budget() {
		return "", nil
	}
	if trigger := int(float64(s.Budget()) * s.TriggerRatio); tokens <= trigger {
		if due, err := c.turnsDue(ctx, t, s); due || err != nil {
			return "", err // compact_every_turns
		}
		return fmt.Sprintf("%d tokens, under the trigger %d (%.2f of %d)", tokens, trigger, s.TriggerRatio, s.Budget()), nil
	}
	return c.waiting(ctx, t, s)
}

// waiting returns why automatic compaction waits: the latest applied or ineffective compaction
// of the thread ran with the same limit, reserve and ratios and saw every message there is, so
// another one would find the same. "" when it does not wait.
func (c *Compactor) waiting(ctx context.Context, t memory.Thread, s Settings) (string, error) {
	last, ok, err := c.Store.Compactions().LatestSettled(ctx, t.ID)
	if err != nil || !ok {
		return "", err
	}
	same := last.TokenLimit == s.TokenLimit && last.ReserveTokens == s.ReserveTokens &&
		last.TargetRatio == s.TargetRatio && last.TriggerRatio == s.TriggerRatio
	if last.LastSeq < int64(t.Messages) || !same {
		return "", nil
	}
	return fmt.Sprintf("compaction %d (%s) ran with the same settings and saw every message of the thread: automatic compaction waits for new messages", last.ID, last.Status), nil
}

// Compact compacts a thread's active context and returns the report. Unless forced, a thread
// under the trigger is left alone (status not_needed). The thread's strategy says how:
// summarize (the middle becomes a summary), mask (old tool results become placeholders),
// hybrid (mask, then summarize when the masked context is still over the target) or window
// (the oldest units leave the view). A context at or above L * emergency_ratio (or a call with
// Emergency set) is compacted with reason emergency by the cheapest path: mask first, then a
// summary within EmergencyTimeout. On failure every message stays as it was (unless
// on_failure is fit: then the view is fitted, see Settings.OnFailure), a failed report is
// recorded, and the error wraps each provider's cause.
func (c *Compactor) Compact(ctx context.Context, thread string, opt Options) (memory.Report, error) {
	j, err := c.prepare(ctx, thread, opt)
	if err != nil {
		return memory.Report{}, fmt.Errorf("compact %q: %w", thread, err)
	}
	if !opt.Force && !opt.Emergency && !opt.Requested && opt.again == 0 {
		j.rep.Status = StatusNotNeeded
		if j.rep.Detail, err = c.notNeeded(ctx, j.a.Thread, j.a.Tokens, j.s); err != nil || j.rep.Detail != "" {
			return *j.rep, err
		}
	}
	if !opt.Force && !opt.DryRun && opt.again == 0 {
		if rep, held, err := j.hold(ctx); held {
			return rep, err
		}
	}
	if err := j.decide(); err != nil {
		return *j.rep, fmt.Errorf("compact %q: %w", thread, err)
	}
	if opt.DryRun {
		j.planned()
		return *j.rep, nil
	}
	if j.d.Ineffective && (j.a.Tokens <= j.s.Budget() || !j.reshapes()) {
		return j.ineffective(ctx)
	}
	if j.before(ctx, opt) {
		c.afterHook(ctx, *j.rep)
		return *j.rep, nil
	}
	rep, err := j.run(ctx)
	if err == nil && j.d.Again && rep.Status == memory.StatusApplied && opt.again < maxAgain {
		// The strategy has more to do on the context this one left (Decision.Again): one
		// more compaction, with the same reason, whatever the trigger says now.
		opt.again++
		opt.reason = rep.Reason
		return c.Compact(ctx, thread, opt)
	}
	return rep, err
}

// maxAgain bounds the compactions a Compact call chains when strategies ask for another
// (Decision.Again).
const maxAgain = 4

// prepare reads what a compaction of thread starts from: its settings and its active context.
func (c *Compactor) prepare(ctx context.Context, thread string, opt Options) (*job, error) {
	if err := checkInstructions(opt.Instructions); err != nil {
		return nil, err
	}
	s, err := c.SettingsFor(ctx, thread, opt.Override)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.summarizers(s); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	start := c.Store.Now()
	a, err := c.Store.Active(ctx, thread, memory.ReadOptions{Light: true})
	if err != nil {
		return nil, err
	}
	rep := &memory.Report{
		Thread: thread, Reason: reasonFor(a.Tokens, s, opt), TokenLimit: s.TokenLimit,
		TokensBefore: a.Tokens, TokensAfter: a.Tokens, MessagesBefore: len(a.Entries), MessagesAfter: len(a.Entries),
		CreatedAt: start.UTC(), Strategy: s.Strategy, FactsDropped: []string{},
	}
	j := &job{c: c, s: s, a: a, rep: rep, keep: int(float64(s.Budget()) * s.TargetRatio), timeout: s.TotalTimeout}
	if opt.Requested {
		// Asked for at a natural break, under the limit: the older part of what there is goes.
		j.keep = min(j.keep, int(float64(a.Tokens)*s.TargetRatio))
	}
	if rep.Reason == ReasonEmergency {
		j.timeout = min(j.timeout, c.emergencyBudget(ctx, s, a.Tokens))
	}
	return j, nil
}

// EmergencyTimeout bounds the summarizing of an emergency compaction, unless the summarizer's
// measured speed asks for more (see Config.Pace): the cascade skips the providers it leaves no
// time for (outcome skipped_budget) and the offline rung still answers.
const EmergencyTimeout = 20 * time.Second

// emergencyBudget is the time an emergency compaction of a context of tokens tokens gives its
// summarizing: EmergencyTimeout, or more when the summarizer's measured speed needs more (a
// slow local model is not cut at a fixed 20 s; total_timeout still bounds it).
func (c *Compactor) emergencyBudget(ctx context.Context, s Settings, tokens int) time.Duration {
	if d, ok := c.pace(ctx, s, tokens); ok && d > EmergencyTimeout {
		return d
	}
	return EmergencyTimeout
}

// Reason is why a compaction ran, as its report says (memory.Report.Reason) and its row
// stores it (compactions.reason); allReasons lists them all.
type Reason = string

// Compaction reasons.
const (
	ReasonThreshold Reason = "threshold" // the context passed L * trigger_ratio
	ReasonEmergency Reason = "emergency" // at or above L * emergency_ratio, or a caller's emergency (serve's fit)
	ReasonForced    Reason = "forced"    // Options.Force
	ReasonRequested Reason = "requested" // the agent's model asked for it (memory_compact)
)

// allReasons is every compaction reason, the one list of them.
var allReasons = []Reason{ReasonThreshold, ReasonEmergency, ReasonForced, ReasonRequested}

// The statuses of a compaction that did not run: compact reports them, memory never stores
// them (memory.Status lists the stored ones).
const (
	StatusNotNeeded memory.Status = "not_needed" // under the trigger and not forced
	StatusPlanned   memory.Status = "planned"    // a dry run
	StatusSkipped   memory.Status = "skipped"    // a before_compaction hook said skip
	StatusHeld      memory.Status = "held"       // the breaker holds the thread after failures in a row
)

// reasonFor is the reason of a compaction: emergency when the call says so or the context is
// at or above L * emergency_ratio (unless forced), else forced or threshold.
func reasonFor(tokens int, s Settings, opt Options) Reason {
	switch {
	case opt.reason != "":
		return opt.reason // a compaction chained to the one before (Decision.Again)
	case opt.Emergency:
		return ReasonEmergency
	case opt.Requested:
		return ReasonRequested
	case opt.Force:
		return ReasonForced
	case float64(tokens) >= s.EmergencyRatio*float64(s.Budget()):
		return ReasonEmergency
	}
	return ReasonThreshold
}

func errorText(err error, redact func(string) string) string {
	if err == nil {
		return ""
	}
	if redact != nil {
		return redact(err.Error())
	}
	return err.Error()
}

// logEnd logs a recorded compaction's outcome: failed at warn, the others at info.
func (c *Compactor) logEnd(ctx context.Context, rep memory.Report) {
	level := slog.LevelInfo
	if rep.Status == memory.StatusFailed {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("thread", rep.Thread), slog.Int64("compaction_id", rep.ID), slog.String("reason", string(rep.Reason)),
		slog.String("strategy", rep.Strategy), slog.String("outcome", string(rep.Status)), slog.String("provider", rep.Provider),
		slog.String("model", rep.Model), slog.Int("tokens_before", rep.TokensBefore), slog.Int("tokens_after", rep.TokensAfter),
		slog.Int("passes", rep.Passes), slog.Int("requests", rep.Requests), slog.Int64("duration_ms", rep.DurationMs),
	}
	if rep.Error != "" {
		attrs = append(attrs, slog.String("error", rep.Error)) // redacted by errorText
	}
	c.log(ctx, level, "compaction ended", attrs...)
}

// log writes one record to Logger (nil: nothing).
func (c *Compactor) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if c.cfg.Logger != nil {
		c.cfg.Logger.LogAttrs(context.WithoutCancel(ctx), level, msg, attrs...)
	}
}

func (c *Compactor) report(ctx context.Context, rep memory.Report) {
	if c.cfg.OnReport != nil {
		c.hook(func() error { return c.cfg.OnReport(ctx, rep) })
	}
	c.afterHook(ctx, rep)
}

// summarized calls OnSummarized with the messages a pass replaced, read whole.
func (c *Compactor) summarized(ctx context.Context, a memory.Active, plan Plan, id int64, sum summary) {
	if c.cfg.OnSummarized == nil {
		return
	}
	c.hook(func() error {
		middle := plan.middle(a.Entries)
		msgs := make([]memory.Entry, 0, len(middle))
		// The messages are read whole run by run: an earlier summary (and the message held
		// beside it, which lies within its range) splits them.
		for len(middle) > 0 {
			if middle[0].CompactionID != 0 {
				msgs = append(msgs, middle[0]) // the earlier summary
				middle = middle[1:]
				continue
			}
			n := 1
			for n < len(middle) && middle[n].CompactionID == 0 {
				n++
			}
			full, err := c.Store.Messages(ctx, a.Thread.ID, middle[0].Seq, middle[n-1].Seq)
			if err != nil {
				return err
			}
			msgs = append(msgs, full...)
			middle = middle[n:]
		}
		return c.cfg.OnSummarized(ctx, Span{Thread: a.Thread.ID, CompactionID: id, Messages: msgs, Summary: sum.text, Facts: sum.facts})
	})
}

// hook runs a host's hook: its error or panic goes to HookError and never further.
func (c *Compactor) hook(f func() error) {
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("hook panicked: %v", p)
			}
		}()
		return f()
	}()
	if err != nil && c.cfg.HookError != nil {
		c.cfg.HookError(err)
	}
}

func (c *Compactor) progress(p Progress) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(p)
	}
}

// describe explains a plan for a dry run; masked is the masked view it is planned on (hybrid),
// nil for summarize.
func (p Plan) describe(masked []memory.Entry, a memory.Active) string {
	pre := ""
	if masked != nil {
		pre = describeView(a.Entries, masked) + "; then "
		a = withEntries(a, masked)
	}
	held := ""
	if len(p.Stay) > 0 {
		ids := make([]int64, len(p.Stay))
		for i, k := range p.Stay {
			ids[i] = a.Entries[k].CompactionID
		}
		held = fmt.Sprintf("; keep %s (of compaction %s) as they are (%d tokens)",
			english.Count(len(ids), "summary", "summaries"), seqList(ids), p.StayTokens)
	}
	if p.Hold {
		held += fmt.Sprintf("; hold the newest user message, seq %d (%d tokens)", a.Entries[p.HeldAt].Seq, p.HeldTokens)
	}
	return pre + fmt.Sprintf("keep %d pinned (%d tokens)%s; summarize %s, seq %d-%d (%d tokens) into at most %d tokens; keep the newest %d (%d tokens)",
		p.Pinned, p.PinnedTokens, held, english.Count(p.MiddleLen(), "message", "messages"), p.FromSeq, p.ToSeq, p.MiddleTokens, p.SummaryBudget, len(a.Entries)-p.Kept, p.KeptTokens)
}
