package compact

// StrategyMask replaces old tool results by placeholders (no provider is called).
const StrategyMask = "mask"

type maskStrategy struct{}

func (maskStrategy) Name() string { return StrategyMask }

func (maskStrategy) Decide(in StrategyInput) Decision {
	return viewDecision(StrategyMask, in.Entries, in.MaskOld(in.Entries, in.Keep))
}
