package compact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memcascade/memcascade/llm"
)

// Named cascades: a compaction's summary is written by the summarizer its settings name
// (Settings.Cascade), and a long middle may be read in parts by another (Settings.PartCascade).
// The compactor's Summarizer is the one named DefaultCascade; Config.Summarizers holds the
// others (config.Config.NewCompactor gives it the config's cascades: section).

// Names of summarizers that every compactor knows.
const (
	// DefaultCascade names the compactor's own Summarizer (the config's top-level cascade).
	DefaultCascade = "default"
	// NoCascade, as Settings.PartCascade, means no part cascade: the summary's cascade reads
	// the whole middle.
	NoCascade = "none"
)

// Keys of Settings.Cascade and Settings.PartCascade.
const (
	KeyCascade     = "cascade"
	KeyPartCascade = "part_cascade"
)

// cascadeNameRE is what a cascade's name may be: a word of letters, digits, '_', '-' and '.'.
var cascadeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// CascadeNameProblem says what is wrong with name as the name of a cascade of one's own ("" when
// nothing is): a word of at most 64 letters, digits, '_', '-' and '.', and neither
// DefaultCascade nor NoCascade, which every compactor reserves.
func CascadeNameProblem(name string) string {
	switch {
	case name == DefaultCascade || name == NoCascade:
		return "is reserved (" + DefaultCascade + " names the top-level cascade, " + NoCascade + " no part cascade)"
	case !cascadeNameRE.MatchString(name):
		return "is not a cascade name: want at most 64 letters, digits, '_', '-' or '.', starting with a letter or digit"
	}
	return ""
}

// cascadeProblems are the rules of Cascade and PartCascade that hold whatever the names a
// compactor knows (see Settings.Problems): a name's form; Cascade is never NoCascade.
func (s Settings) cascadeProblems() []*SettingError {
	var ps []*SettingError
	check := func(key, name string, none bool) {
		switch {
		case name == "" || name == DefaultCascade || none && name == NoCascade: // "": the default
		case name == NoCascade:
			ps = append(ps, broken(key, strconv.Quote(name), "cannot be "+NoCascade+": the summary needs a cascade"))
		default:
			if p := CascadeNameProblem(name); p != "" {
				ps = append(ps, broken(key, strconv.Quote(name), p))
			}
		}
	}
	check(KeyCascade, s.Cascade, false)
	check(KeyPartCascade, s.PartCascade, true)
	return ps
}

// UnknownCascade returns the *SettingError of settings s (filled) that name a cascade not among
// names (the cascades of one's own a compactor or config has; DefaultCascade and NoCascade are
// always known), nil when both are known.
func UnknownCascade(s Settings, names []string) error {
	for _, k := range []struct{ key, name string }{{KeyCascade, s.Cascade}, {KeyPartCascade, s.PartCascade}} {
		if k.name == DefaultCascade || k.name == NoCascade || slices.Contains(names, k.name) {
			continue
		}
		known := append([]string{DefaultCascade}, slices.Sorted(slices.Values(names))...)
		return &SettingError{Key: k.key, Value: strconv.Quote(k.name), Rule: "is not a cascade of the config (want " + strings.Join(known, ", ") + ")",
			Msg: fmt.Sprintf("%s %q is not a cascade of the config (want %s)", k.key, k.name, strings.Join(known, ", "))}
	}
	return nil
}

// Cascades are the names of the summarizers of Config.Summarizers, sorted.
func (c *Compactor) Cascades() []string {
	names := make([]string, 0, len(c.cfg.Summarizers))
	for name := range c.cfg.Summarizers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// summarizers returns the summarizer that writes the summary of a compaction with settings s
// and the one that reads its middle in parts (nil: none), or the *SettingError of a name the
// compactor does not know.
func (c *Compactor) summarizers(s Settings) (main, part Summarizer, err error) {
	if err := UnknownCascade(s, c.Cascades()); err != nil {
		return nil, nil, err
	}
	named := func(name string) Summarizer {
		if name == DefaultCascade || name == "" {
			return c.Summarizer
		}
		return c.cfg.Summarizers[name]
	}
	main = named(s.Cascade)
	if s.PartCascade != NoCascade && s.PartCascade != "" {
		part = named(s.PartCascade)
	}
	return main, part, nil
}

// pacer is a summarizer that knows how long its providers take (cascade.Cascade.TimeFor).
type pacer interface {
	TimeFor(ctx context.Context, tokens int) (time.Duration, bool)
}

// pace is the time the summarizer of settings s takes for tokens tokens: Config.Pace for the
// default cascade, a named cascade's own measure when it has one.
func (c *Compactor) pace(ctx context.Context, s Settings, tokens int) (time.Duration, bool) {
	if s.Cascade != DefaultCascade && s.Cascade != "" {
		if p, ok := c.cfg.Summarizers[s.Cascade].(pacer); ok {
			return p.TimeFor(ctx, tokens)
		}
	}
	if c.cfg.Pace != nil {
		return c.cfg.Pace(ctx, tokens)
	}
	return 0, false
}

// inParts has part summarize the middle part by part, each part on its own (see mapParts), and
// main write the summary from the part summaries (see reduce). A middle that fits one of the
// part provider's requests is one part. The report's chunks count the part requests too.
func (in *input) inParts(ctx context.Context, id int64, main, part Summarizer) (llm.Result, error) {
	var texts []string
	if _, err := part.Run(ctx, id, in.partsTask(&texts)); err != nil {
		return llm.Result{}, fmt.Errorf("part cascade: %w", err)
	}
	partChunks := in.chunks.Load()
	return main.Run(ctx, id, func(ctx context.Context, t llm.Target, comp llm.Completer) (string, error) {
		in.chunks.Store(partChunks)
		r := requestShape(t, in.bodyBudget, in.prompt.System, in.systemTokens, in.compactTokens)
		if t.ContextWindow > 0 && r.limit < minChunkTokens {
			return "", fmt.Errorf("%w: a window of %d tokens leaves %d for the part summaries beside the instructions (%d) and the answer (%d); a request needs %d",
				llm.ErrWindowTooSmall, t.ContextWindow, r.limit, r.systemTokens, r.out, minChunkTokens)
		}
		return in.reduce(ctx, t, comp, r, texts)
	})
}

// partsTask is the part cascade's task: the middle cut to the provider's window and each part
// summarized on its own, into *out (set by the turn that succeeds). A provider that finds a part
// too long gets a smaller split, as the running summary does.
func (in *input) partsTask(out *[]string) llm.Task {
	return func(ctx context.Context, t llm.Target, comp llm.Completer) (string, error) {
		*out = nil
		in.chunks.Store(0)
		r := requestShape(t, in.bodyBudget, in.prompt.System, in.systemTokens, in.compactTokens)
		for resplits := 0; ; resplits++ {
			texts, err := in.mapParts(ctx, t, comp, r)
			if errors.Is(err, llm.ErrContextLength) && resplits < maxResplits {
				if r.limit <= 0 {
					in.sizeBlocks()
					r.limit = splitTokens([]part{{0, len(in.blocks)}}, in.blocks)
				}
				if r.limit /= 2; r.limit >= minChunkTokens {
					continue
				}
			}
			if err != nil {
				return "", err
			}
			*out = texts
			return strings.Join(texts, "\n\n"), nil
		}
	}
}
