package compact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	redactpkg "github.com/memcascade/memcascade/redact"
	"github.com/memcascade/memcascade/tokencount"
	"github.com/memcascade/memcascade/transcript"
)

// Sizes of the summarizer's input, in tokens of the thread's tokenizer.
const (
	// windowShare of a provider's context window is used: its own tokenizer may count the
	// same text differently from the thread's.
	windowShare = 0.9
	// requestFraming covers the request template around the transcript.
	requestFraming = 120
	// minChunkTokens is the smallest chunk worth a request: a provider whose window leaves
	// less is treated as too small (class context_length) and the cascade moves on.
	minChunkTokens = 256
	// maxResplits bounds how often a provider that answers context_length gets a smaller split.
	maxResplits = 3
	// factsShare of the summary budget is left free for the facts the provider may drop.
	factsShare = 0.2
	// blockHeaderTokens is what a message's transcript header and call ids add to its count.
	blockHeaderTokens = 12
	// countedBlockBytes: a rendered message up to this size is counted, not estimated.
	countedBlockBytes = 1024
)

// ledgerFirstTokens is the size of a middle from which its ledger is made before the providers
// are asked rather than while they write. Both work on the whole middle, and together they are
// the peak of a compaction's memory: for a middle of 3 million tokens (100,000 short
// messages) the ledger's work holds about 40 MB and the offline summarizer's as much again.
// Made first, the ledger only adds its facts to what the providers hold; the ledger takes
// its time out of total_timeout then. Below it (a middle of 10,000 messages is 300,000
// tokens), the two run side by side, which is quicker.
const ledgerFirstTokens = 1_000_000

// summary is the outcome of one pass's summarization.
type summary struct {
	text                  string // the summary message's text, header and facts included
	tokens                int    // its count as a message
	provider, model       string
	chunks                int
	facts                 []facts.Fact
	checker               *facts.Checker // of facts
	outside               []bool         // facts of the ledger already in the kept or pinned messages
	factsTotal, factsKept int            // the ledger's size, and the facts the provider's prose held
	dropped               []facts.Fact   // facts that could not fit (see factFit)
	named                 []facts.Fact   // facts of the stored ledger an earlier report named dropped
	base                  *storedRow     // the stored ledger the row's is written as the difference from (see encodeStored)
}

// block is one message of the middle as a request sends it.
type block struct {
	// text is the block's own rendering: that of a previous summary sent whole, of a message
	// cut to fit a small window, of a part summary. "" for a message of the middle as it is:
	// it is rendered from the input's transcript message when a request or a split needs it
	// (see input.partText, input.sizeBlocks), not held while the summarizer works (a long
	// middle renders to the size of its text again).
	text   string
	tokens int
	// estimated: tokens is the message's stored count plus its header, and the block is to
	// be sized before a split reads its size (see input.sizeBlocks).
	estimated bool
}

// summarize asks the summarizer for a summary of plan's middle and completes it with the
// facts it dropped. The ledger is that of the middle, with carried added (facts an earlier
// step of the compaction put in the middle in a form the ledger would not recognise).
func (c *Compactor) summarize(ctx context.Context, id int64, pass int, a memory.Active, plan Plan, s Settings, carried []facts.Fact, h hookInput) (summary, error) {
	in, err := c.newInput(a, plan, s, pass, h.instructions)
	if err != nil {
		return summary{}, err
	}
	// The ledger is made while the providers write: it is only needed once the summary is
	// back. It is the stored ledger of the summary the middle folds in plus the facts of the
	// messages newly summarized (see ledger.go); the facts an earlier report named dropped are
	// carried in the stored ledger, not checked again. The facts check's index of the ledger,
	// and which of its facts the kept messages hold, are made there too: neither depends on
	// the summary.
	type checked struct {
		ledger, named []facts.Fact
		base          *storedRow
		checker       *facts.Checker
		outside       []bool
		err           error
	}
	ledgerc := make(chan checked, 1)
	ledger := func() {
		fs, base, err := c.middleLedger(ctx, plan.middle(a.Entries), in.tms)
		if err != nil {
			ledgerc <- checked{err: err}
			return
		}
		ch := checked{base: base}
		ch.ledger, ch.named = needed(facts.Merge(fs, carried))
		ch.checker = facts.NewChecker(ch.ledger)
		ch.outside = ch.checker.Kept(outsideText(plan.result(a.Entries)))
		ledgerc <- ch
	}
	if plan.MiddleTokens >= ledgerFirstTokens {
		ledger() // before the providers, not beside them: see ledgerFirstTokens
	} else {
		go ledger()
	}
	res, hooked := llm.Result{}, false
	if h.summary != "" {
		res, hooked = in.hookSummary(ctx, h.summary)
	}
	if !hooked {
		main, part, serr := c.summarizers(s)
		switch {
		case serr != nil:
			err = serr
		case part != nil:
			res, err = in.inParts(ctx, id, main, part)
		default:
			res, err = main.Run(ctx, id, in.task)
		}
	}
	lo := <-ledgerc
	in = in.composing()
	if err != nil {
		return summary{chunks: int(in.chunks.Load())}, fmt.Errorf("%w: %w", ErrSummarize, err)
	}
	if lo.err != nil {
		return summary{chunks: int(in.chunks.Load())}, lo.err
	}
	var sum summary
	if hooked {
		sum = in.composeAsIs(res, lo.ledger, lo.checker, lo.outside, s)
	} else {
		sum = in.compose(res, lo.ledger, lo.named, lo.checker, lo.outside, plan, s)
	}
	sum.named, sum.base = lo.named, lo.base
	return sum, nil
}

// input is what one pass sends to every provider it tries: the middle, redacted and rendered,
// and the sizes of the summary.
type input struct {
	c       *Compactor
	thread  string
	pass    int
	counter tokencount.Counter
	header  string
	tms     []transcript.Message // the middle as the summarizer reads it, redacted
	blocks  []block
	// maxText is the MaxTextBytes the middle's messages are rendered with (max_result_bytes).
	maxText int
	units   []int // where each unit of the middle starts
	// prev: the middle begins with the previous summary (a re-compaction). It is sent as the
	// summary to update, in a block of its own, not as a message of the transcript; its block
	// (blocks[0]) is sized as that block and split with the rest, so it goes with part 1.
	prev bool
	// bodyBudget is the hard limit of the summary's body, asked the size asked for.
	bodyBudget, asked int
	prompt            Prompt
	instructions      string // the call's and the hook's, redacted: instructionsBlock
	systemTokens      int    // of the full instructions; compactTokens of the compact ones
	compactTokens     int
	maxCost           float64      // max_cost in dollars (0: no limit; see checkCost)
	summaryMax        int          // summary_max_tokens: the output of checkCost's estimate
	chunks            atomic.Int64 // the requests of the provider whose turn ran last
	progressMu        sync.Mutex
	sized             sync.Once // the estimated blocks counted (sizeBlocks)
}

// composing returns what composing the summary reads of in, without the rendered middle,
// which neither the composing nor anything after it needs: for a long middle it is the size of
// the thread's text again. in itself is left as it is, for a task that a summarizer may have
// left running.
func (in *input) composing() *input {
	out := &input{c: in.c, thread: in.thread, pass: in.pass, counter: in.counter, header: in.header,
		prev: in.prev, bodyBudget: in.bodyBudget, asked: in.asked, prompt: in.prompt, instructions: in.instructions,
		systemTokens: in.systemTokens, compactTokens: in.compactTokens, maxCost: in.maxCost, summaryMax: in.summaryMax}
	out.chunks.Store(in.chunks.Load())
	return out
}

// newInput renders the middle of plan for the summarizer.
func (c *Compactor) newInput(a memory.Active, plan Plan, s Settings, pass int, instructions string) (*input, error) {
	counter, err := c.Store.Counter(a.Thread.Encoding)
	if err != nil {
		return nil, err
	}
	in := &input{c: c, thread: a.Thread.ID, pass: pass, counter: counter,
		header: summaryHeader(plan.FromSeq, plan.ToSeq), maxCost: s.MaxCost, summaryMax: s.SummaryMaxTokens}
	// The body may use what is left of the budget after the message framing and header; two
	// tokens of slack cover the join of header and body.
	in.bodyBudget = plan.SummaryBudget - counter.CountMessage(chat.TextMessage(s.SummaryRole, in.header)) - 2
	if in.bodyBudget < minSummaryTokens/2 {
		return nil, fmt.Errorf("%w: no room for a summary (%d tokens)", ErrSummarize, in.bodyBudget)
	}
	middle := plan.middle(a.Entries)
	in.render(middle, s)
	in.units = append([]int{0}, memory.Cuts(middle, 0)...)
	// The size asked for: a quarter of the middle, within what the budget leaves for the
	// facts the provider may drop. The budget itself is only the hard limit.
	in.asked = min(max(plan.MiddleTokens/4, 2*minSummaryTokens), int(float64(in.bodyBudget)*(1-factsShare)))
	in.asked = max(in.asked, minSummaryTokens/2)
	if len(middle) > 0 && middle[0].CompactionID != 0 {
		in.prev = true
		// The summary to update is sent whole (it is held to its own budget), with the
		// instruction to update it: its block counts both.
		var sb strings.Builder
		transcript.RenderMessage(&sb, in.tms[0], transcript.Options{})
		with := renderRequest("", "", "", in.tms[0].Text, 1, 1, in.asked)[1].Content
		without := renderRequest("", "", "", "", 1, 1, in.asked)[1].Content
		in.blocks[0] = block{text: sb.String(), tokens: max(1, counter.CountText(with)-counter.CountText(without)) + 1}
	}
	in.prompt = Prompt{System: systemPrompt}
	if s.Prompt != "" {
		if in.prompt, err = ParsePrompt(s.Prompt); err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
	}
	in.instructions = instructionsBlock(c.redact(instructions))
	extra := counter.CountText(in.instructions)
	in.systemTokens = counter.CountText(in.prompt.System) + counter.CountText(in.prompt.After) + extra + requestFraming
	in.compactTokens = counter.CountText(compactPrompt) + extra + requestFraming
	if s.Prompt != "" {
		in.compactTokens = in.systemTokens // one's own prompt is sent whole, whatever the window
	}
	return in, nil
}

// render redacts the middle into its transcript messages, which its blocks are rendered from
// when a request is written. Each message is redacted once, whole, before its long text is
// trimmed (a trim could cut a secret short of what the patterns recognise); the transcript and
// the fact ledger are both made of the redacted messages.
func (in *input) render(middle []memory.Entry, s Settings) {
	in.tms = make([]transcript.Message, len(middle))
	in.blocks = make([]block, len(middle))
	in.maxText = s.MaxResultBytes
	// The context pass reads the conversation in order (a bare reply to a request for a
	// secret, a token split over messages); the per-message redaction after it runs on one
	// goroutine per CPU for a long middle, each a run of messages.
	texts := contextTexts(middle)
	onCPUs(len(middle), func(lo, hi int) { in.redactRange(middle, texts, lo, hi) })
}

// renderParallelMin is the number of messages from which the work on each message of the
// middle (rendering, counting) spreads over the CPUs.
const renderParallelMin = 256

// onCPUs runs f over [0, n): in one run per CPU, each a range of its own, when n is
// renderParallelMin or more a CPU; else in one run.
func onCPUs(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/renderParallelMin)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { f(w*n/workers, (w+1)*n/workers) })
	}
	wg.Wait()
}

// redactRange redacts middle[lo:hi], whose texts after the context pass are texts[lo:hi], into
// in.tms, and gives in.blocks their estimated sizes.
func (in *input) redactRange(middle []memory.Entry, texts []string, lo, hi int) {
	for i := lo; i < hi; i++ {
		in.tms[i] = transcriptMessage(middle[i], texts[i], in.c.redact)
		// A block's size is the message's stored count plus its header until a split needs
		// it (see sizeBlocks): a provider without a window sends the middle whole.
		in.blocks[i] = block{tokens: middle[i].Tokens + blockHeaderTokens, estimated: true}
	}
}

// renderBlock writes message i of the middle into sb as its block.
func (in *input) renderBlock(sb *strings.Builder, i int) {
	transcript.RenderMessage(sb, in.tms[i], transcript.Options{MaxTextBytes: in.maxText})
}

// renderSize is room enough for message i of the middle rendered: its text and each call as
// max_result_bytes trims them, and their headers.
func (in *input) renderSize(i int) int {
	trimmed := func(n int) int {
		if in.maxText > 0 {
			return min(n, in.maxText+64) // the trim marker
		}
		return n
	}
	m := &in.tms[i]
	size := trimmed(len(m.Text)) + len(m.Role) + len(m.Name) + len(m.ToolCallID) + 40 // "[#seq role name= call=]\n", the last newline
	for _, tc := range m.ToolCalls {
		size += len(tc.Name) + trimmed(len(tc.Arguments)) + len(tc.ID) + 20 // "-> call  (id )\n"
	}
	return size
}

// sizeBlocks sizes the estimated blocks, once: what a split into requests reads. A block is
// counted when it is short (the header is most of a short message's block, and the estimate
// would pack a request with half what it holds) or when trimming made it smaller than its
// message; a longer one keeps its estimate.
func (in *input) sizeBlocks() {
	in.sized.Do(func() {
		onCPUs(len(in.blocks), func(lo, hi int) {
			var sb strings.Builder // the range's blocks are rendered one after the other, a few at a time
			for i := lo; i < hi; i++ {
				b := &in.blocks[i]
				if !b.estimated {
					continue
				}
				b.estimated = false
				if b.text != "" {
					b.tokens = in.counter.CountText(b.text) + 1
					continue
				}
				if sb.Len() > 1<<16 {
					sb.Reset()
				}
				start := sb.Len()
				in.renderBlock(&sb, i)
				text := sb.String()[start:]
				if rendered := len(in.tms[i].Text) + argsLen(in.tms[i].ToolCalls); len(text) < rendered || len(text) <= countedBlockBytes {
					b.tokens = in.counter.CountText(text) + 1 // 1: the newline joining it to the next
				}
			}
		})
	})
}

// accept rejects a final summary over its budget.
func (in *input) accept(text string) error {
	if n := in.counter.CountText(in.c.redact(text)); n > in.bodyBudget {
		return fmt.Errorf("summary of %d tokens is over its budget of %d (not smaller than it must be)", n, in.bodyBudget)
	}
	return nil
}

// task is one provider's turn: the middle, in as many parts as its window needs, each request
// carrying the summary of the parts before.
func (in *input) task(ctx context.Context, t llm.Target, comp llm.Completer) (string, error) {
	in.chunks.Store(0) // the requests of this provider: the last one to run is the one whose summary is used
	if err := in.checkCost(t); err != nil {
		return "", err
	}
	r := requestShape(t, in.bodyBudget, in.prompt.System, in.systemTokens, in.compactTokens)
	if t.Concurrency > 1 {
		text, err := in.mapReduce(ctx, t, comp, r)
		if !errors.Is(err, llm.ErrContextLength) {
			return text, err
		}
		in.chunks.Store(0) // too large after all: the running summary below re-splits
	}
	bl, parts, limit, err := in.split(t, r)
	if err != nil {
		return "", err
	}
	running := ""
	for k, resplits := 0, 0; k < len(parts); k++ {
		resp, err := in.request(ctx, t, comp, r, bl, parts, k, running)
		if errors.Is(err, llm.ErrContextLength) && resplits < maxResplits {
			// Too large for this provider after all: split what is left smaller and go on.
			resplits++
			var ok bool
			if bl, parts, limit, ok = in.resplit(bl, parts, k, limit); !ok {
				return "", err
			}
			k--
			continue
		}
		if err != nil {
			return "", err
		}
		running = in.c.redact(strings.TrimSpace(resp.Text)) // it is sent again with the next part
		if limit > 0 && resplits == 0 && k+1 < len(parts) { // a provider that refused a part has a smaller window than it says
			parts = in.repack(t, r, bl, parts, k+1, limit, running)
		}
	}
	return running, nil
}

// repack packs parts[k:] again when the summary so far leaves the next request more room than
// the split reserved for it (an answer of r.out tokens): each request is filled to what its
// window holds beside the instructions, the framing and the summary as sent, so a thread of
// short messages takes fewer requests. limit is what the parts were packed within.
func (in *input) repack(t llm.Target, r shape, bl []block, parts []part, k, limit int, running string) []part {
	msgs := in.messages(r, "", running, "", k+1, len(parts))
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.TextMessage(m.Role, m.Content)
	}
	// 2: the part numbers may take a digit more once there are fewer parts.
	room := int(float64(t.ContextWindow)*windowShare) - r.out - in.counter.CountMessages(cm) - 2
	if room <= limit || room <= splitTokens(parts[k:k+1], bl) {
		return parts
	}
	from := parts[k].from
	rest := split(bl[from:], shift(in.units, from), room)
	for i := range rest {
		rest[i].from += from
		rest[i].to += from
	}
	return append(parts[:k:k], rest...)
}

// split cuts the middle into the parts of provider t's requests (shape r).
func (in *input) split(t llm.Target, r shape) ([]block, []part, int, error) {
	limit := r.limit
	if t.ContextWindow > 0 && limit < minChunkTokens {
		return nil, nil, 0, fmt.Errorf("%w: a window of %d tokens leaves %d for the transcript beside the instructions (%d) and the answer (%d); a request needs %d",
			llm.ErrWindowTooSmall, t.ContextWindow, limit, r.systemTokens, r.out, minChunkTokens)
	}
	if limit > 0 {
		in.sizeBlocks()
	}
	bl := in.blocks
	parts := split(bl, in.units, limit)
	if limit > 0 && len(parts) > 1 {
		// Later parts carry the running summary (at most out tokens): leave room for it.
		if limit -= r.out; limit < minChunkTokens {
			return nil, nil, 0, fmt.Errorf("%w: a window of %d tokens leaves %d for the transcript beside the instructions (%d), the summary so far and the answer (%d each); a request needs %d",
				llm.ErrWindowTooSmall, t.ContextWindow, limit, r.systemTokens, r.out, minChunkTokens)
		}
		bl = fitBlocks(in.blocks, in.tms, limit, in.counter.CountText)
		parts = split(bl, in.units, limit)
	}
	return bl, parts, limit, nil
}

// request sends part k.
func (in *input) request(ctx context.Context, t llm.Target, comp llm.Completer, r shape, bl []block, parts []part, k int, running string) (llm.Response, error) {
	text, tms, previous := in.partData(bl, parts[k], !transcriptOnly(comp))
	return in.send(ctx, t, comp, r, text, tms, k, len(parts), running, previous, k == len(parts)-1)
}

// transcriptOnly reports whether comp reads a request's conversation, never its messages
// (llm.TranscriptReader): the offline rung. Its requests carry no messages (see send).
func transcriptOnly(comp llm.Completer) bool {
	r, ok := comp.(llm.TranscriptReader)
	return ok && r.ReadsTranscript()
}

// partData is what part p of blocks bl sends: its rendered transcript (when render is set; ""
// else) and its messages and, for the first part of a re-compaction, the previous summary, as
// the summary to update rather than a message of the transcript.
func (in *input) partData(bl []block, p part, render bool) (text string, tms []transcript.Message, previous string) {
	partText := func(p part) string {
		if !render {
			return ""
		}
		return in.partText(bl, p)
	}
	if !in.prev || p.from != 0 {
		return partText(p), in.tms[p.from:p.to], ""
	}
	previous = in.tms[0].Text
	if bl[0].text != in.blocks[0].text { // cut to fit a small window: sent as cut
		if ms := transcript.Parse(bl[0].text); len(ms) == 1 {
			previous = ms[0].Text
		}
	}
	rest := part{from: 1, to: p.to}
	return partText(rest), in.tms[1:p.to], previous
}

// messages are the messages of a request (see send).
func (in *input) messages(r shape, text, running, previous string, k, n int) []llm.Message {
	msgs := renderRequest(r.system, text, running, previous, k+1, n, in.asked)
	if in.prompt.After != "" {
		msgs[len(msgs)-1].Content += "\n\n" + in.prompt.After
	}
	if in.instructions != "" {
		msgs[len(msgs)-1].Content += "\n\n" + in.instructions
	}
	return msgs
}

// send sends one request: text (the rendered transcript of tms) as part k of n, with the
// summary so far (running) or the summary it updates (previous); the final request's answer
// is held to the summary's budget. A Completer that reads only the conversation
// (transcriptOnly) is sent it without the messages a model would read: for a long middle they
// are the size of its text again.
func (in *input) send(ctx context.Context, t llm.Target, comp llm.Completer, r shape, text string, tms []transcript.Message, k, n int, running, previous string, final bool) (llm.Response, error) {
	in.progressMu.Lock()
	in.c.progress(Progress{Thread: in.thread, Pass: in.pass, Provider: t.Name, Chunk: k + 1, Chunks: n})
	in.progressMu.Unlock()
	var msgs []llm.Message
	if !transcriptOnly(comp) || len(tms) == 0 && running == "" && previous == "" {
		msgs = in.messages(r, text, running, previous, k, n)
	}
	req := llm.Request{Messages: msgs, Transcript: tms, Running: running, Previous: previous,
		MaxTokens: r.out, TargetTokens: in.asked, Headings: in.prompt.Headings}
	if final {
		req.Accept = in.accept
	}
	in.chunks.Add(1)
	return comp.Complete(ctx, req)
}

// resplit splits parts[k:] smaller after a provider found part k too long; false when half of
// it would be under a useful request.
func (in *input) resplit(bl []block, parts []part, k, limit int) ([]block, []part, int, bool) {
	size := splitTokens(parts[k:k+1], bl)
	if limit > 0 {
		size = min(size, limit)
	}
	if limit = size / 2; limit < minChunkTokens {
		return bl, parts, limit, false
	}
	from := parts[k].from
	bl = fitBlocks(bl, in.tms, limit, in.counter.CountText)
	rest := split(bl[from:], shift(in.units, from), limit)
	for i := range rest {
		rest[i].from += from
		rest[i].to += from
	}
	return bl, append(parts[:k:k], rest...), limit, true
}

// compose completes the provider's summary with the facts it dropped.
func (in *input) compose(res llm.Result, ledger, named []facts.Fact, checker *facts.Checker, outside []bool, plan Plan, s Settings) summary {
	body := strings.TrimSpace(in.c.redact(res.Text))
	fit := factFit{
		ledger: ledger, checker: checker, header: in.header, count: in.counter.CountText,
		outside:  outside,
		named:    named,
		soft:     in.bodyBudget,
		headings: in.prompt.Headings,
		hard:     plan.RoomBudget - (plan.SummaryBudget - in.bodyBudget),
	}
	nKept := 0 // the facts the provider's prose holds
	for _, ok := range checker.Kept(body) {
		if ok {
			nKept++
		}
	}
	text, dropped := fit.compose(body)
	return summary{
		text: text, tokens: in.counter.CountMessage(chat.TextMessage(s.SummaryRole, text)),
		provider: res.Provider, model: res.Model, chunks: int(in.chunks.Load()),
		facts: ledger, checker: checker, outside: fit.outside, factsTotal: len(ledger), factsKept: nKept, dropped: dropped,
	}
}

// outsideText is the text of the messages that stay beside the summary, for the facts check:
// what they show as facts (see shownText), with their names and tool calls.
func outsideText(parts ...[]memory.Entry) string {
	var b strings.Builder
	for _, es := range parts {
		for _, e := range es {
			b.WriteString(e.Message.Name)
			b.WriteByte('\n')
			b.WriteString(FactsText(e))
			b.WriteByte('\n')
			for _, tc := range e.Message.ToolCalls {
				b.WriteString(tc.Function.Name + " " + tc.Function.Arguments + "\n")
			}
		}
	}
	return b.String()
}

// summaryHeader is the header of the summary of messages from to to: it names the range and
// where the originals are. It stays in the stored summary (agents and memctl search read it),
// and is never a fact: a facts check reads the summary's body (summaryBody).
func summaryHeader(from, to int64) string { return fmt.Sprintf(summaryHeaderFormat, from, to) }

const summaryHeaderFormat = "Summary of the earlier conversation (messages %d to %d; the originals are kept in history, and `memctl search` finds them):\n\n"

// summaryHeaderRE finds summaryHeader at the start of a summary; it is made from its format.
var summaryHeaderRE = regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(summaryHeaderFormat), "%d", `\d+`))

// summaryBody is summary without its header.
func summaryBody(summary string) string {
	if loc := summaryHeaderRE.FindStringIndex(summary); loc != nil {
		return summary[loc[1]:]
	}
	return summary
}

// shape is how one provider's requests are cut: the instructions, the answer's size and the
// transcript tokens of a request (0: no limit).
type shape struct {
	system            string
	systemTokens, out int
	limit             int
}

// compactWindow: a provider with a smaller window gets the compact instructions and an answer
// sized to the window, so that most of each request is transcript.
const compactWindow = 8192

// requestShape sizes the requests to provider t. max_output_tokens is a ceiling; in a small
// window the answer (and so the summary carried to the next part) is held to an eighth of it.
func requestShape(t llm.Target, bodyBudget int, system string, systemTokens, compactTokens int) shape {
	r := shape{system: system, systemTokens: systemTokens, out: bodyBudget}
	if t.MaxOutputTokens > 0 {
		r.out = min(r.out, t.MaxOutputTokens)
	}
	if t.ContextWindow <= 0 {
		return r
	}
	if t.ContextWindow < compactWindow {
		if system == systemPrompt { // one's own prompt has no compact form
			r.system, r.systemTokens = compactPrompt, compactTokens
		}
		r.out = min(r.out, max(t.ContextWindow/8, minSummaryTokens*2))
	}
	r.limit = int(float64(t.ContextWindow)*windowShare) - r.systemTokens - r.out
	return r
}

func (c *Compactor) redact(s string) string {
	s = memory.MakeStorable(s) // a provider may answer with NUL characters: no summary keeps them
	if c.Redact == nil {
		return s
	}
	return c.Redact(s)
}

// fitBlocks returns blocks with every message larger than limit tokens rendered again, cut
// shorter (head and tail around the transcript's marker) until it fits: in a small window a
// request is never larger than the window because of one long tool result. The others are
// shared with blocks.
func fitBlocks(blocks []block, tms []transcript.Message, limit int, count func(string) int) []block {
	out := blocks
	for i, b := range blocks {
		if b.tokens <= limit {
			continue
		}
		if &out[0] == &blocks[0] {
			out = slices.Clone(blocks)
		}
		for maxBytes := limit * 3; maxBytes >= 64; maxBytes = maxBytes * 3 / 4 {
			var sb strings.Builder
			transcript.RenderMessage(&sb, tms[i], transcript.Options{MaxTextBytes: maxBytes})
			out[i] = block{text: sb.String(), tokens: count(sb.String()) + 1}
			if out[i].tokens <= limit {
				break
			}
		}
	}
	return out
}

// part is a run of blocks [from, to) sent in one request.
type part struct{ from, to int }

// text is the transcript of part p of blocks that all have their own text (see block).
func (p part) text(blocks []block) string {
	var b strings.Builder
	size := 0
	for i := p.from; i < p.to; i++ {
		size += len(blocks[i].text) + 1
	}
	b.Grow(size)
	for i := p.from; i < p.to; i++ {
		if i > p.from {
			b.WriteByte('\n')
		}
		b.WriteString(blocks[i].text)
	}
	return b.String()
}

// partText is the transcript of part p of bl, blocks of the middle: a long part is rendered
// in runs, one a CPU, and the runs joined.
func (in *input) partText(bl []block, p part) string {
	n := p.to - p.from
	runs := make([]string, min(runtime.GOMAXPROCS(0), n/renderParallelMin))
	if len(runs) <= 1 {
		return in.runText(bl, p.from, p.to)
	}
	var wg sync.WaitGroup
	for w := range runs {
		wg.Go(func() { runs[w] = in.runText(bl, p.from+w*n/len(runs), p.from+(w+1)*n/len(runs)) })
	}
	wg.Wait()
	return strings.Join(runs, "\n")
}

// runText renders blocks [from, to) of bl, joined by newlines.
func (in *input) runText(bl []block, from, to int) string {
	size := 0
	for i := from; i < to; i++ {
		if bl[i].text != "" {
			size += len(bl[i].text) + 1
		} else {
			size += in.renderSize(i) + 1
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte('\n')
		}
		if bl[i].text != "" {
			b.WriteString(bl[i].text)
		} else {
			in.renderBlock(&b, i)
		}
	}
	return b.String()
}

// split groups blocks into parts of at most limit tokens (0: one part), cutting between units
// (units holds the index where each unit starts, ascending, from 0). A unit larger than limit is
// cut between its messages; a message larger than limit goes alone.
func split(blocks []block, units []int, limit int) []part {
	if limit <= 0 {
		return []part{{0, len(blocks)}}
	}
	var parts []part
	cur, size := part{}, 0
	flush := func() {
		if cur.to > cur.from {
			parts = append(parts, cur)
		}
		cur, size = part{from: cur.to, to: cur.to}, 0
	}
	for u, start := range units {
		end := len(blocks)
		if u+1 < len(units) {
			end = units[u+1]
		}
		ut := 0
		for i := start; i < end; i++ {
			ut += blocks[i].tokens
		}
		if size+ut > limit {
			flush()
		}
		if ut <= limit {
			cur.to, size = end, size+ut
			continue
		}
		for i := start; i < end; i++ { // a unit too large: cut it between messages
			if size+blocks[i].tokens > limit {
				flush()
			}
			cur.to, size = i+1, size+blocks[i].tokens
		}
	}
	flush()
	return parts
}

func argsLen(calls []transcript.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Arguments)
	}
	return n
}

func splitTokens(parts []part, blocks []block) int {
	t := 0
	for _, p := range parts {
		for i := p.from; i < p.to; i++ {
			t += blocks[i].tokens
		}
	}
	return t
}

// shift returns the unit starts at or after from, relative to from (0 always included).
func shift(units []int, from int) []int {
	out := []int{0}
	for _, u := range units {
		if u > from {
			out = append(out, u-from)
		}
	}
	return out
}

// transcriptMessages are entries as the summarizer reads them, redacted: what only the
// sequence shows first (redact.Context: a bare value typed in reply to a request for a
// password, PIN, token or key; a token cut in two by the end of a message or content part),
// then each field with redact.
func transcriptMessages(es []memory.Entry, redact func(string) string) []transcript.Message {
	texts := contextTexts(es)
	out := make([]transcript.Message, len(es))
	for i, e := range es {
		out[i] = transcriptMessage(e, texts[i], redact)
	}
	return out
}

// contextTexts are the texts of es after the conversation's own redaction (redact.Context):
// what each message's text is before its own patterns run.
func contextTexts(es []memory.Entry) []string {
	turns := make([]redactpkg.Turn, len(es))
	one := make([]string, len(es)) // each turn's one text, in one allocation
	for i, e := range es {
		role := e.Message.Role
		if e.CompactionID != 0 {
			role = transcript.RoleSummary
		}
		one[i] = e.Text()
		turns[i] = redactpkg.Turn{Role: role, Texts: one[i : i+1 : i+1]}
	}
	turns, _ = redactpkg.Context(turns)
	texts := make([]string, len(es))
	for i := range turns {
		texts[i] = turns[i].Texts[0]
	}
	return texts
}

// transcriptMessage is an entry with the given text as the summarizer reads it, its text and
// arguments redacted.
func transcriptMessage(e memory.Entry, text string, redact func(string) string) transcript.Message {
	// Every field that reaches the provider is redacted, the header fields included.
	m := transcript.Message{Seq: e.Seq, Role: e.Message.Role, Name: redact(e.Message.Name), ToolCallID: redact(e.Message.ToolCallID), Text: redact(text)}
	if e.CompactionID != 0 {
		m.Role, m.Seq = transcript.RoleSummary, 0
	}
	for _, tc := range e.Message.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, transcript.ToolCall{ID: redact(tc.ID), Name: redact(tc.Function.Name), Arguments: redact(tc.Function.Arguments)})
	}
	return m
}
