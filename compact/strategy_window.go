package compact

// StrategyWindow leaves the oldest whole units out of the view (no provider is called).
const StrategyWindow = "window"

type windowStrategy struct{}

func (windowStrategy) Name() string { return StrategyWindow }

func (windowStrategy) Decide(in StrategyInput) Decision {
	return viewDecision(StrategyWindow, in.Entries, window(in.Entries, in.Keep))
}
