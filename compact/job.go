package compact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

// A compaction runs in three steps: plan (decide: what the strategy will do, a pure function of
// the active context and the settings), summarize (passes: the provider calls, for summarize
// and hybrid), and commit (applySummary, applyView, finish: the rows, through the store's
// writer, memory.Store.Compactions).

// job is one compaction under way.
type job struct {
	c    *Compactor
	s    Settings
	a    memory.Active // the active context it was planned on
	keep int           // the kept budget: L * target_ratio
	rep  *memory.Report
	sh   shaper
	d    Decision
	id   int64
	// lost are the facts the compaction named dropped in what it applied so far (before anything
	// was applied: those hybrid's mask left out); the ledger stored with its summary marks them so.
	lost []facts.Fact
	// carried are facts the summary must keep although its input may not show them as facts:
	// those of the results hybrid masked that the placeholders still hold (a digest keeps an
	// amount as a bare number, which the summary's own ledger would not know for an amount).
	carried []facts.Fact
	timeout time.Duration // bounds the summarizing (0: none)
	// instructions go into every request's prompt (the call's and the hook's); replacement is
	// the hook's summary of the first pass (see hooks.go).
	instructions, replacement string
}

// decide plans the compaction (the plan step): no provider is called, nothing is written.
func (j *job) decide() error {
	counter, err := j.c.Store.Counter(j.a.Thread.Encoding)
	if err != nil {
		return err
	}
	j.sh = shaper{count: counter, redact: j.c.redact, knobs: maskKnobs{mask: j.s.Mask, turns: j.s.KeepTurns}}
	if j.rep.Reason == ReasonEmergency && j.rep.Strategy == StrategySummarize {
		j.rep.Strategy = StrategyHybrid // the cheapest path first: masking costs nothing
	}
	strat, ok := strategyNamed(j.rep.Strategy)
	if !ok {
		return fmt.Errorf("strategy %q is not registered (want %s)", j.rep.Strategy, strategyList())
	}
	d := strat.Decide(StrategyInput{Entries: j.a.Entries, Settings: j.s, Keep: j.keep, MaskOld: j.sh.maskOld})
	if d.View != nil {
		if err := checkView(strat.Name(), j.a.Entries, d.View); err != nil {
			return err
		}
	}
	if d.Summarize {
		on := j.a.Entries
		if d.View != nil {
			on = d.View
		}
		if err := checkPlan(strat.Name(), on, d.Plan); err != nil {
			return err
		}
	}
	j.d = d
	j.planFigures()
	return nil
}

// planFigures fills the report's planned figures.
func (j *job) planFigures() {
	rep, a := j.rep, j.a
	if j.d.Summarize {
		p := j.d.Plan
		rep.SummarizedMessages, rep.KeptMessages = p.MiddleLen(), p.keptLen(len(a.Entries))
		rep.FromSeq, rep.ToSeq, rep.SummaryBudget = p.FromSeq, p.ToSeq, p.SummaryBudget
		return
	}
	rep.KeptMessages = len(j.d.View) - memory.PinnedLen(j.d.View)
}

// planned makes the report of a dry run.
func (j *job) planned() {
	j.rep.Status = StatusPlanned
	switch {
	case j.d.Ineffective:
		j.rep.Detail = "ineffective: " + j.d.Why
	case j.d.Summarize:
		j.rep.Detail = j.d.Plan.describe(j.d.View, j.a)
	default:
		j.rep.Detail = describeView(j.a.Entries, j.d.View)
		j.rep.TokensAfter, j.rep.MessagesAfter = memory.PromptTokens(j.d.View), len(j.d.View)
	}
	j.note()
}

// note adds to the report's detail what an emergency did.
func (j *job) note() {
	if j.rep.Reason != ReasonEmergency {
		return
	}
	path := "masked old tool results first (no provider call)"
	if j.d.Summarize {
		path += fmt.Sprintf(", then summarized within %s (the providers it leaves no time for are skipped)", j.timeout.Round(time.Second))
	}
	if j.rep.Strategy == StrategyWindow {
		path = "left the oldest units out (no provider call)"
	}
	j.rep.Detail = strings.TrimPrefix(j.rep.Detail+"; emergency: "+path, "; ")
}

// deepNoteText marks the note of a deep compaction in a report's detail; deepTag the short
// note of the deep compactions of the thread after it.
const (
	deepNoteText = "of the limit are pinned messages"
	deepTag      = "deep compaction"
)

// deepNoteWindow is how many of a thread's latest reports deepNote reads.
const deepNoteWindow = 5

// deepNote says, in the report's detail and the log, that the pinned messages and the newest
// unit leave the target out of reach, so the compaction went deep. The share the pinned
// messages take is said once per thread and limit: the deep compactions that follow (one of
// the thread's latest reports with the same limit says it) only say they are deep.
func (j *job) deepNote(ctx context.Context) {
	p := j.d.Plan
	if !j.d.Summarize || !p.Deep || p.Ineffective || j.rep.Status != memory.StatusApplied {
		return
	}
	if len(p.Stay) > 0 { // the summaries the plan kept take the room, not (only) the pinned messages
		j.rep.Detail = strings.TrimPrefix(fmt.Sprintf("%s; %s: a summary of at most %d tokens, only the newest unit kept (%s leave less than the trigger's headroom)",
			j.rep.Detail, deepTag, p.SummaryBudget, p.pinnedWords()), "; ")
		return
	}
	reps, err := j.c.Store.Reports(ctx, j.a.Thread.ID, deepNoteWindow)
	if err != nil {
		return
	}
	note := fmt.Sprintf("%s: a summary of at most %d tokens, only the newest unit kept (the pinned messages leave less than the trigger's headroom)", deepTag, p.SummaryBudget)
	said := slices.ContainsFunc(reps, func(r memory.Report) bool {
		return r.TokenLimit == j.s.TokenLimit && (strings.Contains(r.Detail, deepNoteText) || strings.Contains(r.Detail, deepTag))
	})
	if !said {
		held := ""
		if p.Hold {
			held = fmt.Sprintf(" the newest user message (%d tokens) and", p.HeldTokens)
		}
		note = fmt.Sprintf("%.0f%% %s (%d of %d tokens): with%s the newest unit (%d tokens) they leave less than the trigger's headroom, so compactions go deeper (a summary of at most %d tokens, only the newest unit kept) rather than run every turn",
			100*float64(p.PinnedTokens)/float64(j.s.Budget()), deepNoteText, p.PinnedTokens, j.s.Budget(), held, p.KeptTokens, p.SummaryBudget)
		j.c.log(ctx, slog.LevelWarn, "pinned messages leave less than the trigger's headroom", slog.String("thread", j.rep.Thread),
			slog.Int("pinned_tokens", p.PinnedTokens), slog.Int("limit", j.s.Budget()), slog.String("detail", note))
	}
	j.rep.Detail = strings.TrimPrefix(j.rep.Detail+"; "+note, "; ")
}

// ineffective records a compaction that would not save enough, and, when the context is over
// L, says why it stays there.
func (j *job) ineffective(ctx context.Context) (memory.Report, error) {
	rep, a := j.rep, j.a
	rep.Status, rep.Detail = memory.StatusIneffective, j.d.Why
	rep.SummarizedMessages, rep.KeptMessages, rep.FromSeq, rep.ToSeq = 0, len(a.Entries)-memory.PinnedLen(a.Entries), 0, 0
	var over error
	if a.Tokens > j.s.Budget() {
		over = j.c.overLimit(a, MakePlan(a.Entries, j.s, j.keep), j.s, 0)
		rep.Error = errorText(over, j.c.Redact)
	}
	id, err := j.c.Store.Compactions().Insert(ctx, j.row(memory.StatusIneffective))
	if err != nil {
		return *rep, fmt.Errorf("compact %q: %w", a.Thread.ID, err)
	}
	rep.ID = id
	j.c.logEnd(ctx, *rep)
	j.c.report(ctx, *rep)
	if over != nil {
		return *rep, fmt.Errorf("compact %q: %w", a.Thread.ID, over)
	}
	return *rep, nil
}

// row is the compaction row as it starts.
func (j *job) row(status memory.Status) memory.NewCompaction {
	rep := *j.rep
	rep.Thread, rep.Status = j.a.Thread.ID, status
	return memory.NewCompaction{Report: rep, Limits: j.s.Limits(), Base: j.a.Current, LastSeq: int64(j.a.Thread.Messages)}
}

// run records a running compaction, holds its lease while it works, and records the outcome.
func (j *job) run(ctx context.Context) (memory.Report, error) {
	c, rep := j.c, j.rep
	id, err := c.Store.Compactions().Insert(ctx, j.row(memory.StatusRunning))
	if err != nil {
		return *rep, fmt.Errorf("compact %q: %w", j.a.Thread.ID, err)
	}
	j.id, rep.ID, rep.Status = id, id, memory.StatusRunning
	c.log(ctx, slog.LevelInfo, "compaction started", slog.String("thread", rep.Thread), slog.Int64("compaction_id", id),
		slog.String("reason", string(rep.Reason)), slog.String("strategy", rep.Strategy), slog.Int("tokens_before", rep.TokensBefore),
		slog.Int("messages_before", rep.MessagesBefore), slog.Int("token_limit", rep.TokenLimit))
	stopLease := c.Store.Compactions().Hold(ctx, id)
	err = j.work(ctx)
	switch {
	case err != nil && j.s.OnFailure == OnFailureFit && (errors.Is(err, ErrSummarize) || errors.Is(err, ErrOverLimit)):
		err = j.fitView(ctx, err)
	case errors.Is(err, ErrOverLimit):
		err = j.cutView(ctx, err) // on_failure keep: only the results that no summary can shrink
	}
	stopLease()
	j.note()
	j.deepNote(ctx)
	rep.DurationMs = c.Store.Now().Sub(rep.CreatedAt).Milliseconds()
	if err != nil && rep.Status != memory.StatusApplied {
		rep.Status = memory.StatusFailed
	}
	rep.Error = errorText(err, c.Redact)
	// The report's final figures are written even when the caller's context ended.
	if ferr := j.finish(context.WithoutCancel(ctx)); ferr != nil && err == nil {
		err = ferr
	}
	if full, rerr := c.Store.Report(context.WithoutCancel(ctx), id); rerr == nil {
		*rep = full
	}
	c.logEnd(ctx, *rep)
	c.report(ctx, *rep)
	if err != nil {
		return *rep, fmt.Errorf("compact %q: %w", j.a.Thread.ID, err)
	}
	return *rep, nil
}

// work does what was decided: commits the view of mask or window, or summarizes.
func (j *job) work(ctx context.Context) error {
	if j.d.Ineffective { // over L, and nothing to summarize or mask would bring it under
		return fmt.Errorf("%w: %d tokens, limit %d: %s", ErrOverLimit, j.a.Tokens, j.s.Budget(), j.d.Why)
	}
	if !j.d.Summarize {
		if err := j.applyView(ctx, j.a, j.d.View); err != nil {
			return err
		}
		if t := memory.PromptTokens(j.d.View); t > j.s.Budget() {
			return fmt.Errorf("%w: %d tokens after %s, limit %d", ErrOverLimit, t, j.rep.Strategy, j.s.Budget())
		}
		return nil
	}
	// total_timeout bounds the summarizing; the commit of a summary that came back in time (an
	// offline rung answers even after it) uses the caller's context.
	budget := ctx
	if j.timeout > 0 {
		var cancel context.CancelFunc
		budget, cancel = context.WithTimeout(ctx, j.timeout)
		defer cancel()
	}
	a := j.a
	if j.d.View != nil { // hybrid: the summary is planned on the masked view
		masked, lost, err := j.c.viewFacts(ctx, a.Entries, j.d.View)
		if err != nil {
			return err
		}
		j.lost = lost
		j.carried = slices.DeleteFunc(slices.Clone(masked), func(f facts.Fact) bool { return slices.Contains(j.lost, f) })
		a = withEntries(a, j.d.View)
	}
	plan := j.d.Plan
	if plan.PacedBudget < plan.RoomBudget {
		fast, err := j.c.outpaced(ctx, j.a, j.s)
		if err != nil {
			return err
		}
		if fast {
			plan.RoomBudget = plan.PacedBudget
		}
	}
	return j.passes(ctx, budget, a, plan)
}

// pacedReports is how many of a thread's latest reports outpaced reads.
const pacedReports = 64

// outpaced reports whether the thread compacted, at this limit, at least once per quarter of
// L of the messages appended: the compactions applied so far against the tokens appended
// since the first of them (each one's tokens_before less what the one before left). Then the
// facts of this summary may take it only up to what leaves a quarter of L below the trigger
// (Plan.PacedBudget), and the compactions of a life stay within
// ceil(appended / (0.25 × L)) + 2; a thread that compacts less often keeps its facts up to L.
func (c *Compactor) outpaced(ctx context.Context, a memory.Active, s Settings) (bool, error) {
	reps, err := c.Store.Reports(ctx, a.Thread.ID, pacedReports)
	if err != nil {
		return false, err
	}
	var applied []memory.Report // newest first
	for _, r := range reps {
		if r.Status == memory.StatusApplied && r.TokenLimit == s.TokenLimit {
			applied = append(applied, r)
		}
	}
	if len(applied) == 0 {
		return false, nil
	}
	n, appended := len(applied), 0
	if len(reps) == pacedReports { // older ones may be left out: count from the oldest read
		n--
	} else {
		appended = applied[n-1].TokensBefore
	}
	for k := len(applied) - 2; k >= 0; k-- {
		appended += applied[k].TokensBefore - (applied[k+1].TokensAfter + applied[k+1].TokensAppended)
	}
	appended += a.Tokens - (applied[0].TokensAfter + applied[0].TokensAppended)
	return n*(s.Budget()/4) >= appended, nil
}

// withEntries returns a showing entries instead of its own.
func withEntries(a memory.Active, entries []memory.Entry) memory.Active {
	a.Entries, a.Tokens = entries, memory.PromptTokens(entries)
	a.Thread.ActiveMessages, a.Thread.ActiveTokens = len(entries), a.Tokens
	return a
}

// applyView commits post, a view of pre that no new summary made, and reports what it left
// out: the facts of what it masked, cut or left out that post no longer holds are named. What
// the compaction named when it applied a pass or a view before stays named: the ledger stored
// with its summary marks it dropped, and this view does not store another. Before anything
// was applied, the facts hybrid's mask left out are named only when post leaves them out too.
func (j *job) applyView(ctx context.Context, pre memory.Active, post []memory.Entry) error {
	ledger, dropped, err := j.c.viewFacts(ctx, pre.Entries, post)
	if err != nil {
		return err
	}
	dropped = facts.Merge(dropped, unshownFacts(pre.Entries, post, j.c.redact))
	lost := j.lost
	if j.rep.Status != memory.StatusApplied {
		lost = missingFacts(lost, nil, outsideText(post))
	}
	lost = slices.Concat(lost, dropped)
	rep := j.rep
	commit := *rep
	commit.TokensAfter, commit.MessagesAfter = memory.PromptTokens(post), len(post)
	commit.FactsTotal, commit.FactsKept = rep.FactsTotal+len(ledger), rep.FactsKept+len(ledger)-len(dropped)
	commit.FactsDropped = nonNil(factTexts(lost))
	setCachePrefix(&commit, j.a.Entries, post)
	if err := j.c.Store.Compactions().ApplyView(ctx, memory.Commit{Thread: pre.Thread.ID, ID: j.id, Base: pre.Current,
		Entries: post, ViewSeq: int64(pre.Thread.Messages), Report: commit}); err != nil {
		return err
	}
	j.lost = lost
	rep.Status, rep.TokensAfter, rep.MessagesAfter = memory.StatusApplied, memory.PromptTokens(post), len(post)
	rep.FactsTotal, rep.FactsKept = rep.FactsTotal+len(ledger), rep.FactsKept+len(ledger)-len(dropped)
	rep.FactsDropped = nonNil(factTexts(lost))
	rep.CachePrefixTokens, rep.CacheInvalidatedTokens = commit.CachePrefixTokens, commit.CacheInvalidatedTokens
	return nil
}

// setCachePrefix records on r the prompt prefix a compaction keeps of before, the context it
// was planned on, in after, the context it leaves: the tokens of the entries before the first
// one it changed, which an upstream's prompt cache still holds (a cache matches a prefix); the
// rest of r.TokensBefore it invalidated. An entry is the same when it shows the same message or
// summary, marked or not alike, at the same size.
func setCachePrefix(r *memory.Report, before, after []memory.Entry) {
	prefix := 0
	for i := 0; i < len(before) && i < len(after); i++ {
		b, a := before[i], after[i]
		if b.Seq != a.Seq || b.CompactionID != a.CompactionID || b.Tokens != a.Tokens || (b.Mark() == nil) != (a.Mark() == nil) {
			break
		}
		prefix += b.Tokens
	}
	inv := max(r.TokensBefore-prefix, 0)
	r.CachePrefixTokens, r.CacheInvalidatedTokens = &prefix, &inv
}

// fitView fits the view within L after summarizing failed with cause (on_failure fit): the
// view as it now is (this compaction's, if a pass applied) is masked, its oldest units left
// out, its newest unit's largest results cut (see shaper.fit). History is untouched.
func (j *job) fitView(ctx context.Context, cause error) error {
	return j.reshape(ctx, cause, "on_failure fit", j.sh.fit)
}

// cutView is what on_failure keep does when the context stays over L because of the newest
// unit (or what no summary can shrink): the largest tool results after the pinned messages are
// cut with a marker until the view fits (see shaper.cutLargest); nothing is masked or left
// out. History is untouched.
func (j *job) cutView(ctx context.Context, cause error) error {
	return j.reshape(ctx, cause, "results cut to fit", j.cutResults)
}

// cutResults is the view of cutView: entries with their largest tool results cut to fit limit.
func (j *job) cutResults(entries []memory.Entry, limit int) ([]memory.Entry, error) {
	return j.sh.cutLargest(entries, memory.PinnedLen(entries), limit, false)
}

// reshapes reports whether a context over L that no summary can shrink (an ineffective plan)
// is worth a compaction: on_failure fit fits its view, and keep cuts its tool results when
// that makes it fit.
func (j *job) reshapes() bool {
	if j.s.OnFailure == OnFailureFit {
		return true
	}
	_, err := j.cutResults(j.a.Entries, j.s.Budget())
	return err == nil
}

// reshape applies shape to the view as it now is (this compaction's, if a pass applied) after
// cause, and names what it did in the report's detail under label.
func (j *job) reshape(ctx context.Context, cause error, label string, shape func([]memory.Entry, int) ([]memory.Entry, error)) error {
	a, err := j.c.Store.Active(ctx, j.a.Thread.ID, memory.ReadOptions{Light: true})
	if err != nil {
		return errors.Join(cause, err)
	}
	if a.Current != j.a.Current && a.Current != j.id {
		return cause // another compaction was applied meanwhile: its view stands
	}
	post, ferr := shape(a.Entries, j.s.Budget())
	if memory.PromptTokens(post) >= a.Tokens {
		return errors.Join(cause, ferr)
	}
	if j.rep.Passes == 0 { // no summary applied: the view is all this compaction changes
		j.rep.SummarizedMessages, j.rep.KeptMessages = 0, len(post)-memory.PinnedLen(post)
	}
	if err := j.applyView(ctx, a, post); err != nil {
		return errors.Join(cause, err)
	}
	j.rep.Detail = fmt.Sprintf("%s; %s: %s", errorText(cause, j.c.Redact), label, describeView(a.Entries, post))
	return ferr
}

// finish records the final figures and status of the compaction. One that applied nothing
// reports the context as it was: tokens_after = tokens_before, no message summarized.
func (j *job) finish(ctx context.Context) error {
	rep := *j.rep
	if rep.Status != memory.StatusApplied {
		// Nothing was summarized: every message after the pinned ones stays.
		rep.TokensAfter, rep.MessagesAfter = rep.TokensBefore, rep.MessagesBefore
		rep.SummarizedMessages, rep.KeptMessages = 0, len(j.a.Entries)-memory.PinnedLen(j.a.Entries)
	}
	return j.c.Store.Compactions().Finish(ctx, j.id, rep)
}

// describeView says what a view change did, for a report's detail.
func describeView(pre, post []memory.Entry) string {
	ch := memory.ViewChangesOf(post, maxSeq(pre))
	var parts []string
	if n := len(ch.Masked); n > 0 {
		parts = append(parts, fmt.Sprintf("masked %s (seq %s)", english.Count(n, "tool result", "tool results"), seqList(ch.Masked)))
	}
	if len(ch.Omitted) > 0 {
		parts = append(parts, fmt.Sprintf("left seq %s out of the view", rangeList(ch.Omitted)))
	}
	if len(ch.Cut) > 0 {
		parts = append(parts, fmt.Sprintf("cut the tool results seq %s", seqList(ch.Cut)))
	}
	if len(ch.Cleared) > 0 {
		parts = append(parts, fmt.Sprintf("cleared the tool inputs or reasoning of seq %s", seqList(ch.Cleared)))
	}
	if len(parts) == 0 {
		parts = append(parts, "no change")
	}
	return fmt.Sprintf("%s: %d tokens, %s -> %d tokens, %s (history unchanged)", strings.Join(parts, "; "),
		memory.PromptTokens(pre), english.Count(len(pre), "message", "messages"), memory.PromptTokens(post), english.Count(len(post), "message", "messages"))
}

func maxSeq(es []memory.Entry) int64 {
	m := int64(0)
	for _, e := range es {
		m = max(m, e.Seq, e.CoversTo)
	}
	return m
}

func seqList(seqs []int64) string {
	parts := make([]string, len(seqs))
	for i, s := range seqs {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ", ")
}

func rangeList(rs []memory.SeqRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d-%d", r[0], r[1])
		if r[0] == r[1] {
			parts[i] = fmt.Sprint(r[0])
		}
	}
	return strings.Join(parts, ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
