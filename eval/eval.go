// Package eval measures what compaction keeps: a thread is replayed message by message into a
// scratch store under each configuration, compacted when due, and at every checkpoint (after
// each compaction, and at the end) probes generated from the original messages are asked with
// the compacted active context and, as a baseline, with the full history cut to the same limit.
// See docs/eval.md.
package eval

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Config is one configuration to compare.
type Config struct {
	Name     string           `json:"name"`
	Settings compact.Settings `json:"-"`
	// Summarizer, if not nil, builds this configuration's summarizer on its scratch database
	// (else Options.Summarizer's).
	Summarizer func(sc Scratch) (compact.Summarizer, error) `json:"-"`
	// Compactor, when set, builds the configuration's compactor on its scratch database with
	// Settings (memctl eval --cascade: the config's cascades on the scratch database); nil: a
	// compactor over Summarizer.
	Compactor func(sc Scratch, set compact.Settings) (*compact.Compactor, error) `json:"-"`
}

// Options are the inputs of Run.
type Options struct {
	// Messages is the thread, in order.
	Messages []chat.Message
	// Model picks the tokenizer the scratch threads count with ("" : gpt-4o).
	Model string
	// Configs are the configurations compared; each needs Settings.TokenLimit.
	Configs []Config
	// Summarizer builds the summarizer of a scratch database (nil: the offline summarizer).
	Summarizer func(sc Scratch) (compact.Summarizer, error)
	// BeforeCompaction, if not nil, is the compactor's hook of every configuration (see
	// compact.Config): a host that writes summaries of its own, checked against the facts
	// ledger but not completed (what it misses is named in facts_dropped).
	BeforeCompaction func(context.Context, compact.HookEvent) (compact.HookDecision, error)
	// Answerer answers the probes (nil: Lookup).
	Answerer Answerer
	// MaxProbes bounds the probes of each kind at a checkpoint (0: all).
	MaxProbes int
	// Dir is where the scratch databases go ("": a new temporary directory, removed after).
	Dir string
	// Progress, if not nil, gets a line per checkpoint.
	Progress func(string)
}

// Result is what Run measured.
type Result struct {
	Messages    int            `json:"messages"`
	Configs     []ConfigResult `json:"configs"`
	Interrupted bool           `json:"interrupted"`
}

// ConfigResult is the measure of one configuration.
type ConfigResult struct {
	Name        string `json:"name"`
	Strategy    string `json:"strategy"`
	TokenLimit  int    `json:"token_limit"`
	Compactions int    `json:"compactions"`
	Failed      int    `json:"failed_compactions"`
	// FactsDropped is the facts the applied compactions reported left out (facts_dropped).
	FactsDropped int `json:"facts_dropped"`
	Checkpoints  int `json:"checkpoints"`
	Asked        int `json:"probes_asked"`
	// Recall and Baseline are the share of probes answered right, by probe kind and "all".
	Recall   map[string]float64 `json:"recall"`
	Baseline map[string]float64 `json:"baseline_recall"`
	Counts   map[string]int     `json:"probes_by_kind"`
	// Present is the share of probes whose expected answer was in the compacted context at
	// all, answered or not (the answerer aside: what compaction kept).
	Present float64 `json:"present"`
	// TokensSent is the tokens of the contexts sent with the probes (question included);
	// BaselineTokens the same for the baseline.
	TokensSent     int `json:"tokens_sent"`
	BaselineTokens int `json:"baseline_tokens_sent"`
	// Cut is the probes whose compacted context did not fit the limit with the question, and
	// was cut from the front as the baseline is (the compaction left it over the limit).
	Cut          int           `json:"probes_cut"`
	Requests     int           `json:"summarizer_requests"`
	SummarizerMs int64         `json:"summarizer_ms"`
	Probes       []ProbeResult `json:"probes"`
}

// ProbeResult is one probe asked at one checkpoint.
type ProbeResult struct {
	Probe
	// Checkpoint is the number of messages appended when it was asked; After the compaction
	// it follows (0: the end).
	Checkpoint int    `json:"checkpoint"`
	After      int    `json:"after_compaction"`
	Answer     string `json:"answer"`
	// Cut: the compacted context and the question passed the token limit, so the newest
	// entries of the compacted context that fit were sent, as for the baseline.
	// Uncut is then the tokens the compacted context and the question held.
	Cut     bool `json:"cut,omitempty"`
	Uncut   int  `json:"uncut_tokens,omitempty"`
	Correct bool `json:"correct"`
	// Where is where the expected answer was in the context sent: "message N" (the first
	// message kept verbatim that holds it), "summary" (only a compaction's summary holds
	// it), "" (not there).
	Where         string `json:"where"`
	Tokens        int    `json:"tokens"`
	BaselineAns   string `json:"baseline_answer"`
	BaselineOK    bool   `json:"baseline_correct"`
	BaselineWhere string `json:"baseline_where"`
	BaselineTok   int    `json:"baseline_tokens"`
}

// Thread is the name of the scratch thread.
const Thread = "eval"

// Load reads a thread's messages from an import file (JSONL, a JSON array, or
// {"messages": [...]}) through a scratch store, with the import's checks.
func Load(ctx context.Context, r io.Reader) ([]chat.Message, error) {
	dir, err := os.MkdirTemp("", "memctl-eval-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sc, err := openScratch(ctx, dir, "load")
	if err != nil {
		return nil, err
	}
	defer sc.close()
	s := sc.Store
	if _, err := s.Import(ctx, Thread, r, memory.AppendOptions{}); err != nil {
		return nil, err
	}
	hist, err := s.History(ctx, Thread)
	if err != nil {
		return nil, err
	}
	out := make([]chat.Message, len(hist))
	for i, e := range hist {
		out[i] = e.Message
	}
	return out, nil
}

// Scratch is a scratch database: the store a configuration replays the thread into, and
// the handle it is built on, where a cascade built for it keeps its cooldowns and attempt
// log (the store reads the attempts from there).
type Scratch struct {
	Store *memory.Store
	DB    *db.Handle
}

// close closes the store, then the handle under it.
func (sc Scratch) close() error {
	return errors.Join(sc.Store.Close(), sc.DB.Close())
}

// openScratch makes the scratch database name in dir, a new file, and the store on it.
func openScratch(ctx context.Context, dir, name string) (Scratch, error) {
	path := filepath.Join(dir, name+".db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return Scratch{}, err
	}
	f.Close()
	h, err := db.OpenHandle(ctx, path, db.Options{})
	if err != nil {
		return Scratch{}, err
	}
	s, err := memory.New(ctx, h, memory.Options{})
	if err != nil {
		h.Close()
		return Scratch{}, err
	}
	return Scratch{Store: s, DB: h}, nil
}

// Run replays opt.Messages under each configuration and asks the probes. When ctx is
// cancelled it returns what was measured so far, Interrupted, with ctx's error.
func Run(ctx context.Context, opt Options) (Result, error) {
	res := Result{Messages: len(opt.Messages)}
	if len(opt.Messages) == 0 {
		return res, errors.New("eval: the thread has no messages")
	}
	if len(opt.Configs) == 0 {
		return res, errors.New("eval: no configuration to compare")
	}
	for i, c := range opt.Configs {
		if c.Settings.TokenLimit <= 0 {
			return res, fmt.Errorf("eval: configuration %d (%s): no token limit", i+1, c.Name)
		}
	}
	dir := opt.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "memctl-eval-*")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if opt.Answerer == nil {
		opt.Answerer = Lookup{}
	}
	// The probes of each prefix of the thread are the same under every configuration.
	probes := map[int][]Probe{}
	probesAt := func(n int) []Probe {
		if p, ok := probes[n]; ok {
			return p
		}
		p := Probes(opt.Messages, n, opt.MaxProbes)
		probes[n] = p
		return p
	}
	for i, c := range opt.Configs {
		cr, err := runConfig(ctx, opt, dir, i, c, probesAt)
		cr.summarize()
		res.Configs = append(res.Configs, cr)
		if err != nil {
			if ctx.Err() != nil {
				res.Interrupted = true
				return res, ctx.Err()
			}
			return res, fmt.Errorf("eval: %s: %w", c.Name, err)
		}
	}
	return res, nil
}

func runConfig(ctx context.Context, opt Options, dir string, idx int, c Config, probesAt func(int) []Probe) (ConfigResult, error) {
	set := c.Settings.WithDefaults()
	cr := ConfigResult{Name: c.Name, Strategy: set.Strategy, TokenLimit: set.TokenLimit}
	sc, err := openScratch(ctx, dir, fmt.Sprintf("config%d", idx+1))
	if err != nil {
		return cr, err
	}
	defer sc.close()
	s := sc.Store
	comp, err := newCompactor(sc, opt, c)
	if err != nil {
		return cr, err
	}
	model := cmp.Or(opt.Model, "gpt-4o")
	var counter tokencount.Counter
	for i, m := range opt.Messages {
		if err := ctx.Err(); err != nil {
			return cr, err
		}
		if _, err := s.Append(ctx, Thread, []chat.Message{m}, memory.AppendOptions{Model: model}); err != nil {
			return cr, fmt.Errorf("append message %d: %w", i+1, err)
		}
		if counter == nil {
			t, err := s.Thread(ctx, Thread)
			if err != nil {
				return cr, err
			}
			if counter, err = s.Counter(t.Encoding); err != nil {
				return cr, err
			}
		}
		due, err := comp.ShouldCompact(ctx, Thread)
		if err != nil {
			return cr, err
		}
		last, asked := i == len(opt.Messages)-1, false
		if due {
			rep, err := comp.Compact(ctx, Thread, compact.Options{})
			cr.Requests += rep.Requests
			cr.SummarizerMs += rep.DurationMs
			switch rep.Status {
			case memory.StatusApplied:
				cr.Compactions++
				cr.FactsDropped += len(rep.FactsDropped)
				asked = true
				if err := checkpoint(ctx, opt, s, counter, &cr, i+1, cr.Compactions, probesAt); err != nil {
					return cr, err
				}
			case memory.StatusFailed:
				cr.Failed++
			}
			if err != nil && ctx.Err() != nil {
				return cr, ctx.Err()
			}
		}
		if last && !asked { // a compaction after the last message was the end's checkpoint
			if err := checkpoint(ctx, opt, s, counter, &cr, i+1, 0, probesAt); err != nil {
				return cr, err
			}
		}
	}
	return cr, nil
}

// newCompactor is the compactor of configuration c on its scratch database sc.
func newCompactor(sc Scratch, opt Options, c Config) (*compact.Compactor, error) {
	if c.Compactor != nil {
		return c.Compactor(sc, c.Settings)
	}
	var sum compact.Summarizer
	var err error
	switch {
	case c.Summarizer != nil:
		sum, err = c.Summarizer(sc)
	case opt.Summarizer != nil:
		sum, err = opt.Summarizer(sc)
	default:
		sum, err = offline(sc)
	}
	if err != nil {
		return nil, err
	}
	return compact.NewWith(sc.Store, sum, c.Settings, compact.Config{BeforeCompaction: opt.BeforeCompaction}), nil
}

// offline is the offline rung alone, a cascade on the scratch database sc.
func offline(sc Scratch) (compact.Summarizer, error) {
	c, err := sc.Store.Counter(tokencount.EncodingO200k)
	if err != nil {
		return nil, err
	}
	return cascade.NewWith(sc.DB, cascade.Options{Now: sc.Store.Now}, cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive",
		Provider: extractive.Summarizer{Count: c.CountText}, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}), nil
}

// checkpoint asks the probes of the first n messages with the active context and the baseline.
func checkpoint(ctx context.Context, opt Options, s *memory.Store, counter tokencount.Counter, cr *ConfigResult, n, after int, probesAt func(int) []Probe) error {
	a, err := s.Active(ctx, Thread)
	if err != nil {
		return err
	}
	hist, err := s.History(ctx, Thread)
	if err != nil {
		return err
	}
	cr.Checkpoints++
	limit := cr.TokenLimit
	active := a.Messages()
	ps := probesAt(n)
	// The baseline: the newest messages of the history that fit with the longest question.
	qmax := 0
	for _, p := range ps {
		qmax = max(qmax, counter.CountMessages([]chat.Message{questionMessage(p.Question)}))
	}
	base := newest(hist, counter, limit-qmax)
	baseMsgs := messagesOf(base)
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return err
		}
		pr := ProbeResult{Probe: p, Checkpoint: n, After: after}
		q := questionMessage(p.Question)
		// The compacted active context, as it is; when the compaction left it too long for
		// the question, its newest entries that fit, as the baseline.
		sent, sentMsgs := a.Entries, active
		pr.Tokens = counter.CountMessages(append(append([]chat.Message(nil), active...), q))
		if pr.Tokens > limit {
			pr.Cut, pr.Uncut = true, pr.Tokens
			sent = newest(a.Entries, counter, limit-counter.CountMessages([]chat.Message{q}))
			sentMsgs = messagesOf(sent)
			pr.Tokens = counter.CountMessages(append(append([]chat.Message(nil), sentMsgs...), q))
			if pr.Tokens > limit {
				return fmt.Errorf("probe %q at message %d: the question alone holds %d tokens, over the limit of %d", p.Text, n, pr.Tokens, limit)
			}
		}
		if pr.Answer, err = opt.Answerer.Answer(ctx, sentMsgs, p.Question); err != nil {
			return fmt.Errorf("probe %q at message %d: %w", p.Text, n, err)
		}
		pr.Correct = Match(p.Expected, pr.Answer)
		pr.Where = where(sent, p.Expected)
		pr.BaselineTok = counter.CountMessages(append(append([]chat.Message(nil), baseMsgs...), q))
		if pr.BaselineTok > limit {
			return fmt.Errorf("probe %q at message %d: the baseline sent holds %d tokens, over the limit of %d", p.Text, n, pr.BaselineTok, limit)
		}
		if pr.BaselineAns, err = opt.Answerer.Answer(ctx, baseMsgs, p.Question); err != nil {
			return fmt.Errorf("probe %q at message %d (baseline): %w", p.Text, n, err)
		}
		pr.BaselineOK = Match(p.Expected, pr.BaselineAns)
		pr.BaselineWhere = where(base, p.Expected)
		cr.Probes = append(cr.Probes, pr)
	}
	if opt.Progress != nil {
		opt.Progress(fmt.Sprintf("%s: message %d of %d, checkpoint %d: %d probes so far", cr.Name, n, len(opt.Messages), cr.Checkpoints, len(cr.Probes)))
	}
	return nil
}

// newest is the newest entries of hist whose messages fit in budget tokens, starting at no
// tool result whose call was cut.
func newest(hist []memory.Entry, counter tokencount.Counter, budget int) []memory.Entry {
	total := counter.CountMessages(nil) // the reply priming
	start := len(hist)
	for start > 0 {
		n := counter.CountMessage(hist[start-1].Message)
		if total+n > budget {
			break
		}
		total += n
		start--
	}
	for start < len(hist) && hist[start].Message.Role == chat.RoleTool {
		start++
	}
	return hist[start:]
}

func messagesOf(es []memory.Entry) []chat.Message {
	out := make([]chat.Message, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

// where names the entry that holds the answer: "message N" (the first message kept verbatim
// that holds it), else "summary" (only a compaction's summary holds it), else "".
func where(es []memory.Entry, expected string) string {
	inSummary := false
	for _, e := range es {
		if !containsNorm(normalize(messageText(e.Message)), expected) {
			continue
		}
		if e.CompactionID != 0 {
			inSummary = true
			continue
		}
		return fmt.Sprintf("message %d", e.Seq)
	}
	if inSummary {
		return "summary"
	}
	return ""
}

// summarize fills the shares of cr.
func (cr *ConfigResult) summarize() {
	cr.Recall, cr.Baseline, cr.Counts = map[string]float64{}, map[string]float64{}, map[string]int{}
	ok, base, present := map[string]int{}, map[string]int{}, 0
	cr.Asked, cr.TokensSent, cr.BaselineTokens, cr.Cut = len(cr.Probes), 0, 0, 0
	for _, p := range cr.Probes {
		for _, k := range []string{p.Kind, "all"} {
			cr.Counts[k]++
			if p.Correct {
				ok[k]++
			}
			if p.BaselineOK {
				base[k]++
			}
		}
		if p.Where != "" {
			present++
		}
		if p.Cut {
			cr.Cut++
		}
		cr.TokensSent += p.Tokens
		cr.BaselineTokens += p.BaselineTok
	}
	if len(cr.Probes) > 0 {
		cr.Present = float64(present) / float64(len(cr.Probes))
	}
	for k, n := range cr.Counts {
		cr.Recall[k] = float64(ok[k]) / float64(n)
		cr.Baseline[k] = float64(base[k]) / float64(n)
	}
}

// Table writes the table of res, one row per configuration.
func Table(w io.Writer, res Result) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-16s %6s %7s", "CONFIG", "LIMIT", "PROBES")
	for _, k := range ProbeKinds {
		fmt.Fprintf(&b, " %12s", strings.ToUpper(k))
	}
	fmt.Fprintf(&b, " %6s %9s %8s %5s %10s %10s %6s %8s\n", "ALL", "BASELINE", "PRESENT", "CUT", "TOKENS", "BASE_TOK", "REQS", "SUM_MS")
	for _, c := range res.Configs {
		fmt.Fprintf(&b, "%-16s %6d %7d", c.Name, c.TokenLimit, c.Asked)
		for _, k := range ProbeKinds {
			if c.Counts[k] == 0 {
				fmt.Fprintf(&b, " %12s", "-")
				continue
			}
			fmt.Fprintf(&b, " %12s", fmt.Sprintf("%.2f (%d)", c.Recall[k], c.Counts[k]))
		}
		fmt.Fprintf(&b, " %6.2f %9.2f %8.2f %5d %10d %10d %6d %8d\n", c.Recall["all"], c.Baseline["all"], c.Present, c.Cut, c.TokensSent, c.BaselineTokens, c.Requests, c.SummarizerMs)
	}
	for _, c := range res.Configs {
		if c.Cut > 0 {
			b.WriteString("(CUT: probes whose compacted context was over the limit with the question; its newest entries that fit were sent, as for the baseline)\n")
			break
		}
	}
	if res.Interrupted {
		b.WriteString("(interrupted: what was measured so far)\n")
	}
	w.Write(b.Bytes())
}
