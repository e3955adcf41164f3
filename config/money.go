package config

import (
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/memcascade/memcascade/llm"
)

// Price is price_per_mtok, what a provider (or serve's upstream) charges in dollars per
// million tokens: each attempt (each stored reply) gets a cost in dollars.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`   // per million prompt tokens
	Output float64 `yaml:"output" json:"output"` // per million completion tokens
}

// LLM is p as the cascade and the proxy read it; nil for nil.
func (p *Price) LLM() *llm.Price {
	if p == nil {
		return nil
	}
	return &llm.Price{Input: p.Input, Output: p.Output}
}

func priceFields(p *Price) []field {
	return []field{{key: "input", ptr: &p.Input}, {key: "output", ptr: &p.Output}}
}

// price decodes a price_per_mtok mapping into *dst.
func (w *walker) price(dst **Price) func(n *yaml.Node, key string, line int) {
	return func(n *yaml.Node, key string, line int) {
		if n.Kind != yaml.MappingNode {
			w.errorf(line, key, "expected a mapping of prices in dollars per million tokens (input, output), found %s", describe(n))
			return
		}
		p := &Price{}
		w.mapping(n, key, priceFields(p))
		*dst = p
	}
}

// validatePrice checks a price_per_mtok at key: each price a finite number of dollars, not
// negative.
func (ck *checker) validatePrice(key string, p *Price) {
	if p == nil || ck.skip(key) {
		return
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{key + ".input", p.Input}, {key + ".output", p.Output}} {
		if !ck.skip(f.key) && !(f.v >= 0 && !math.IsInf(f.v, 0)) {
			ck.add(f.key, "%s must be a finite number of dollars per million tokens, not negative", num(f.v))
		}
	}
}
