package config

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"
)

type renderConfig struct {
	Model           string                      `yaml:"model"`
	Encoding        string                      `yaml:"encoding"`
	EncodingFile    string                      `yaml:"encoding_file"`
	EncodingPattern string                      `yaml:"encoding_pattern"`
	Compaction      Compaction                  `yaml:"compaction"`
	RedactPatterns  []string                    `yaml:"redact_patterns"`
	Cascade         []renderProvider            `yaml:"cascade"`
	Cascades        map[string][]renderProvider `yaml:"cascades"`
	Serve           Serve                       `yaml:"serve"`
	Offline         *bool                       `yaml:"offline,omitempty"`
	Hooks           *Hooks                      `yaml:"hooks,omitempty"`
}

// renderProvider is a Provider whose extractive-only-unused keys can be left out.
type renderProvider struct {
	Name            string   `yaml:"name"`
	Type            string   `yaml:"type"`
	BaseURL         *string  `yaml:"base_url,omitempty"`
	Model           string   `yaml:"model"`
	APIKeyEnv       *string  `yaml:"api_key_env,omitempty"`
	ContextWindow   Window   `yaml:"context_window"`
	MaxOutputTokens int      `yaml:"max_output_tokens"`
	Temperature     *float64 `yaml:"temperature,omitempty"`
	Timeout         Duration `yaml:"timeout"`
	MaxAttempts     int      `yaml:"max_attempts"`
	MaxWait         Duration `yaml:"max_wait"`
	Concurrency     int      `yaml:"concurrency"`
	Cooldown        Duration `yaml:"cooldown"`
	MaxCooldown     Duration `yaml:"max_cooldown"`
	PricePerMTok    *Price   `yaml:"price_per_mtok,omitempty"`
}

// YAML renders c as a config file with every key written out, for
// `memctl config`: parsing the result gives c back. Providers of type
// extractive omit base_url, api_key_env and temperature when they are empty
// (those keys mean nothing to them). It shows api_key_env names, never
// values: the config holds no values. Source is not written. Strings that
// are not valid UTF-8 (possible only in an invalid Config built in Go) are
// rendered with U+FFFD in their place.
func (c Config) YAML() []byte {
	r := renderConfig{
		Model:           fix(c.Model),
		Encoding:        fix(c.Encoding),
		EncodingFile:    fix(c.EncodingFile),
		EncodingPattern: fix(c.EncodingPattern),
		Compaction:      c.Compaction,
		RedactPatterns:  make([]string, len(c.RedactPatterns)),
		Cascade:         renderProviders(c.Cascade),
		Cascades:        make(map[string][]renderProvider, len(c.Cascades)),
		Serve: Serve{Listen: fix(c.Serve.Listen), Upstream: fix(c.Serve.Upstream),
			UpstreamKeyEnv: fix(c.Serve.UpstreamKeyEnv), TokenEnv: fix(c.Serve.TokenEnv), Recall: c.Serve.Recall,
			PricePerMTok: c.Serve.PricePerMTok, Notice: c.Serve.Notice},
		Offline: c.Offline,
	}
	if c.Hooks.BeforeCompaction != nil || c.Hooks.AfterCompaction != nil {
		h := c.Hooks
		r.Hooks = &h
	}
	r.Compaction.SummaryRole = fix(r.Compaction.SummaryRole)
	r.Compaction.Cascade, r.Compaction.PartCascade = fix(r.Compaction.Cascade), fix(r.Compaction.PartCascade)
	for i, p := range c.RedactPatterns {
		r.RedactPatterns[i] = fix(p)
	}
	for name, ps := range c.Cascades {
		r.Cascades[fix(name)] = renderProviders(ps)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		// Only reachable with values the encoder rejects; say so in the output.
		return []byte("# cannot render config: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	}
	if err := enc.Close(); err != nil {
		return []byte("# cannot render config: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	}
	return buf.Bytes()
}

// renderProviders is a list of providers as YAML shows it.
func renderProviders(ps []Provider) []renderProvider {
	out := make([]renderProvider, len(ps))
	for i, p := range ps {
		rp := renderProvider{
			Name:            fix(p.Name),
			Type:            fix(p.Type),
			Model:           fix(p.Model),
			ContextWindow:   p.ContextWindow,
			MaxOutputTokens: p.MaxOutputTokens,
			Timeout:         p.Timeout,
			MaxAttempts:     p.MaxAttempts,
			MaxWait:         p.MaxWait,
			Concurrency:     p.Concurrency,
			Cooldown:        p.Cooldown,
			MaxCooldown:     p.MaxCooldown,
			PricePerMTok:    p.PricePerMTok,
		}
		baseURL, keyEnv, temp := fix(p.BaseURL), fix(p.APIKeyEnv), p.Temperature
		ext := p.Type == TypeExtractive
		if !ext || baseURL != "" {
			rp.BaseURL = &baseURL
		}
		if !ext || keyEnv != "" {
			rp.APIKeyEnv = &keyEnv
		}
		if !ext || temp != 0 {
			rp.Temperature = &temp
		}
		out[i] = rp
	}
	return out
}

func fix(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
