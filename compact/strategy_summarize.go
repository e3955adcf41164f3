package compact

// StrategySummarize replaces the middle of the active context by a summary.
const StrategySummarize = "summarize"

type summarizeStrategy struct{}

func (summarizeStrategy) Name() string { return StrategySummarize }

func (summarizeStrategy) Decide(in StrategyInput) Decision {
	p := MakePlan(in.Entries, in.Settings, in.Keep)
	return Decision{Plan: p, Summarize: true, Ineffective: p.Ineffective, Why: p.Why}
}
