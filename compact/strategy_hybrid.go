package compact

import "github.com/memcascade/memcascade/memory"

// StrategyHybrid masks old tool results, then summarizes when that is still over the target.
const StrategyHybrid = "hybrid"

type hybridStrategy struct{}

func (hybridStrategy) Name() string { return StrategyHybrid }

func (hybridStrategy) Decide(in StrategyInput) Decision {
	post := in.MaskOld(in.Entries, in.Keep)
	if memory.PromptTokens(post) > in.Keep {
		// The summary covers what is outside the window the mask kept (no share of the target
		// set aside): it is worth a call only when that is more than placeholders.
		if p := makePlan(post, in.Settings, in.Keep, 0, nil); !p.Ineffective || memory.EntryTokens(post) >= memory.EntryTokens(in.Entries) {
			return Decision{View: post, Plan: p, Summarize: true, Ineffective: p.Ineffective, Why: p.Why}
		}
	}
	return viewDecision(StrategyHybrid, in.Entries, post)
}

// viewDecision is the decision of a strategy that only changes the view to post: ineffective
// when post is no smaller than entries.
func viewDecision(name string, entries, post []memory.Entry) Decision {
	d := Decision{View: post}
	if memory.EntryTokens(post) >= memory.EntryTokens(entries) {
		d.Ineffective, d.Why = true, name+" saves nothing: no tool result outside the kept window to mask, no unit to leave out"
	}
	return d
}
