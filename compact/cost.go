package compact

import (
	"fmt"
	"math"
	"strconv"

	"github.com/memcascade/memcascade/llm"
)

// KeyMaxCost is the key of Settings.MaxCost.
const KeyMaxCost = "max_cost"

// costProblems checks max_cost: a finite number of dollars, not negative (0: no limit).
func (s Settings) costProblems() []*SettingError {
	if s.MaxCost >= 0 && !math.IsInf(s.MaxCost, 0) { // false for NaN
		return nil
	}
	return []*SettingError{broken(KeyMaxCost, strconv.FormatFloat(s.MaxCost, 'g', -1, 64),
		"must be a finite number of dollars, not negative (0: no limit)")}
}

// Dollars writes micro-dollars as dollars, with no more places than they need ("0.0105").
func Dollars(micros int64) string {
	return strconv.FormatFloat(float64(micros)/1e6, 'f', -1, 64)
}

// checkCost refuses provider t before anything is sent when its estimate is over max_cost:
// every input token of the request (the instructions and the whole middle) at its input price,
// plus summary_max_tokens at its output price. A provider without a price (the offline rung)
// is free and never refused, and max_cost 0 sets no limit. The estimate is per provider: what
// the providers tried before it spent is not counted.
func (in *input) checkCost(t llm.Target) error {
	if in.maxCost <= 0 || t.Price == nil {
		return nil
	}
	tokens := in.systemTokens
	for _, b := range in.blocks {
		tokens += b.tokens
	}
	estimate := t.Price.Micros(tokens, in.summaryMax)
	limit := int64(math.Round(in.maxCost * 1e6))
	if estimate <= limit {
		return nil
	}
	return fmt.Errorf("%w: %d input tokens at $%g and %d output tokens (summary_max_tokens) at $%g per million are estimated at $%s, over max_cost $%s",
		llm.ErrOverCost, tokens, t.Price.Input, in.summaryMax, t.Price.Output, Dollars(estimate), Dollars(limit))
}
