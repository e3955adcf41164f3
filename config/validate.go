package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/tokencount"
)

// Validate checks a Config built in Go with the same rules [Parse] applies
// to a file, returning *Error values that name the key (without file or
// line), joined with errors.Join when there are several. It checks the
// values as they are: zero values are not replaced by defaults, so call
// [Config.WithDefaults] first to get them.
func (c Config) Validate() error {
	ck := &checker{}
	ck.validate(c)
	return joinErrors(ck.errs)
}

// checker applies the validation rules. When it runs for Parse, lines holds
// the line of every key present in the file and bad the keys whose values
// did not decode (which are not checked again).
type checker struct {
	file  string
	lines map[string]int
	bad   map[string]bool
	errs  []*Error
}

// parent strips the last segment of a key path: "cascade[1].name" ->
// "cascade[1]" -> "cascade" -> "".
func parent(key string) string {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return ""
	}
	return key[:i]
}

// line is the line of key, or of its nearest ancestor present in the file.
func (ck *checker) line(key string) int {
	for k := key; k != ""; k = parent(k) {
		if l := ck.lines[k]; l > 0 {
			return l
		}
	}
	return 0
}

// skip reports whether key or one of its ancestors failed to decode.
func (ck *checker) skip(keys ...string) bool {
	for _, key := range keys {
		for k := key; k != ""; k = parent(k) {
			if ck.bad[k] {
				return true
			}
		}
	}
	return false
}

func (ck *checker) add(key, format string, args ...any) {
	ck.errs = append(ck.errs, &Error{File: ck.file, Line: ck.line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// pair reports a conflict between keys a and b on a, unless only b is
// present in the file, in which case it reports on b. fmtA is formatted with
// a's value and b's (plus b's line when known); fmtB the other way round.
func (ck *checker) pair(a, b, fmtA, fmtB, va, vb string) {
	la, lb := ck.lines[a], ck.lines[b]
	if la == 0 && lb > 0 {
		ck.add(b, fmtB, vb, va)
		return
	}
	if lb > 0 {
		vb += fmt.Sprintf(", line %d", lb)
	}
	ck.add(a, fmtA, va, vb)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

const msgNotAKey = "must name an environment variable, not hold a key"

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// isEnvName reports whether s is a plausible environment variable name
// rather than a pasted key: an identifier, and not a long mixed-case string
// with digits (which is what keys look like; variable names are words).
func isEnvName(s string) bool {
	if !envNameRE.MatchString(s) {
		return false
	}
	if len(s) >= 20 {
		var upper, lower, digit bool
		for _, r := range s {
			switch {
			case r >= 'A' && r <= 'Z':
				upper = true
			case r >= 'a' && r <= 'z':
				lower = true
			case r >= '0' && r <= '9':
				digit = true
			}
		}
		if upper && lower && digit {
			return false
		}
	}
	return true
}

// checkText reports empty (or blank) and malformed strings.
func (ck *checker) checkText(key, v string, required bool) bool {
	if ck.skip(key) {
		return false
	}
	switch {
	case !utf8.ValidString(v):
		ck.add(key, "is not valid UTF-8")
	case required && strings.TrimSpace(v) == "":
		ck.add(key, "must not be empty")
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		ck.add(key, "must not contain control characters")
	default:
		return true
	}
	return false
}

func (ck *checker) atLeast1(key string, v int) bool {
	if ck.skip(key) {
		return false
	}
	if v < 1 {
		ck.add(key, "%d must be at least 1", v)
		return false
	}
	return true
}

func (ck *checker) positive(key string, d Duration) bool {
	if ck.skip(key) {
		return false
	}
	if d <= 0 {
		ck.add(key, "%s must be positive", d)
		return false
	}
	return true
}

func (ck *checker) ratio(key string, v float64) bool {
	if ck.skip(key) {
		return false
	}
	if !(v > 0 && v <= 1) {
		ck.add(key, "%s is outside (0, 1]", num(v))
		return false
	}
	return true
}

func (ck *checker) validate(c Config) {
	ck.checkText("model", c.Model, true)
	ck.validateEncoding(c)
	ck.validateCompaction(c.Compaction)
	ck.validateServe(c.Serve)
	ck.validateRedactPatterns(c.RedactPatterns)
	ck.validateCascade(c.Cascade)
	ck.validateCascades(c)
	ck.validateHooks(c.Hooks)
}

func (ck *checker) validateEncoding(c Config) {
	if !ck.skip("encoding") && c.Encoding != "" && !slices.Contains(tokencount.Encodings(), c.Encoding) {
		ck.add("encoding", "%s is not a known encoding: use %s, or \"\" to pick it from the model", quote(c.Encoding), strings.Join(tokencount.Encodings(), ", "))
	}
	if !ck.skip("encoding_file") && c.EncodingFile != "" && c.Encoding != "" {
		ck.add("encoding_file", "set together with encoding: a thread is counted by one or the other, so set only one")
	}
	if !ck.skip("encoding_pattern") && c.EncodingPattern != "" {
		if c.EncodingFile == "" {
			ck.add("encoding_pattern", "set without encoding_file: it is the split pattern of that file's vocabulary")
		} else if _, err := regexp2.Compile(c.EncodingPattern, regexp2.None); err != nil {
			ck.add("encoding_pattern", "not a regular expression: %v", err)
		}
	}
}

func (ck *checker) validateRedactPatterns(patterns []string) {
	for i, p := range patterns {
		key := fmt.Sprintf("redact_patterns[%d]", i)
		if ck.skip(key) {
			continue
		}
		re, err := regexp.Compile(p)
		switch {
		case err != nil:
			ck.add(key, "invalid regular expression: %v", err)
		case re.MatchString(""):
			ck.add(key, "%s matches the empty string", quote(p))
		}
	}
}

func (ck *checker) validateCascade(cascade []Provider) { ck.validateProviders("cascade", cascade) }

// validateProviders checks the list of providers at key (cascade, or cascades.NAME): at least
// one, each valid, their names unique within the list.
func (ck *checker) validateProviders(key string, cascade []Provider) {
	if ck.skip(key) {
		return
	}
	if len(cascade) == 0 {
		ck.add(key, "at least one provider is required")
		return
	}
	names := map[string]int{}
	for i, p := range cascade {
		prefix := fmt.Sprintf("%s[%d]", key, i)
		if ck.skip(prefix) {
			continue
		}
		if p.Name == "" && !ck.skip(prefix+".name") {
			ck.add(prefix+".name", "is required: every provider needs a unique name")
		} else if ck.checkText(prefix+".name", p.Name, true) {
			if j, dup := names[p.Name]; dup {
				first := fmt.Sprintf("%s[%d]", key, j)
				where := ""
				if l := ck.line(first + ".name"); l > 0 {
					where = fmt.Sprintf(" at line %d", l)
				}
				ck.add(prefix+".name", "duplicate provider name %s (also %s%s)", quote(p.Name), first, where)
			} else {
				names[p.Name] = i
			}
		}
		ck.validateProvider(prefix, p)
	}
}

// validateCascades checks the cascades section: each name a cascade's name, each list valid;
// and that compaction.cascade and compaction.part_cascade name a cascade there is.
func (ck *checker) validateCascades(c Config) {
	for _, name := range slices.Sorted(maps.Keys(c.Cascades)) {
		key := "cascades." + name
		if p := compact.CascadeNameProblem(name); p != "" {
			ck.add(key, "%s %s", quote(name), p)
			continue
		}
		ck.validateProviders(key, c.Cascades[name])
	}
	s := c.Compaction.settings().WithDefaults()
	for _, k := range []struct{ key, name string }{{compact.KeyCascade, s.Cascade}, {compact.KeyPartCascade, s.PartCascade}} {
		key := "compaction." + k.key
		if ck.skip(key) || compact.CascadeNameProblem(k.name) != "" { // reserved, or malformed: Problems says so
			continue
		}
		if _, ok := c.Cascades[k.name]; !ok {
			ck.add(key, "%s is not a cascade: the config defines %s", quote(k.name), knownCascades(c))
		}
	}
}

// knownCascades names the cascades a compaction may name, for a message.
func knownCascades(c Config) string {
	names := append([]string{compact.DefaultCascade + " (the top-level cascade)"}, c.CascadeNames()...)
	return strings.Join(names, ", ")
}

// validateCompaction applies memory's rules of the settings (compact.Settings.Problems), each
// worded with its key under compaction and its line, and adds what only the file has: the
// timeouts as written, and prompt_file (the prompt is checked as it is loaded).
func (ck *checker) validateCompaction(c Compaction) {
	const prefix = "compaction."
	s := c.settings()
	s.Prompt = "" // checked below with prompt_file, which names the file
	for _, p := range s.Problems() {
		key, other := prefix+p.Key, prefix+p.Other
		if ck.skip(key) || p.Other != "" && ck.skip(other) {
			continue // a value that did not decode is reported once, as such
		}
		if p.Other == "" {
			ck.add(key, "%s %s", p.Value, p.Rule)
			continue
		}
		ck.pair(key, other, "%s "+p.Rule+" "+p.Other+" (%s)", "%s "+p.OtherRule+" "+p.Key+" (%s)", p.Value, p.OtherValue)
	}
	// attempt_timeout > total_timeout is allowed: the total wins.
	ck.positive("compaction.attempt_timeout", c.AttemptTimeout)
	ck.positive("compaction.total_timeout", c.TotalTimeout)
	if !ck.skip("compaction.prompt_file") && c.PromptFile != "" {
		if _, err := compact.LoadPrompt(promptPath(ck.file, c.PromptFile)); err != nil {
			ck.add("compaction.prompt_file", "%s", err.Error())
		}
	}
}

// PromptPath is the path of compaction.prompt_file: relative to the config file's directory
// when it is not absolute.
func (c Config) PromptPath() string { return promptPath(c.Source, c.Compaction.PromptFile) }

func promptPath(source, file string) string {
	if file == "" || filepath.IsAbs(file) || source == "" || source == DefaultSource {
		return file
	}
	return filepath.Join(filepath.Dir(source), file)
}

func (ck *checker) validateProvider(prefix string, p Provider) {
	key := func(k string) string { return prefix + "." + k }
	typ := key("type")
	if !ck.skip(typ) && p.Type != TypeOpenAI && p.Type != TypeExtractive {
		ck.add(typ, "%s is not a provider type: use openai or extractive", quote(p.Type))
	}
	extractive := p.Type == TypeExtractive

	if k := key("model"); !extractive && p.Model == "" && ck.lines[k] == 0 && !ck.skip(k) {
		ck.add(k, "is required: name the model the server serves (e.g. model: llama3.2)")
	} else {
		ck.checkText(k, p.Model, true)
	}
	if extractive {
		const unused = "not used by type extractive"
		if !ck.skip(key("base_url")) && p.BaseURL != "" {
			ck.add(key("base_url"), unused)
		}
		if !ck.skip(key("api_key_env")) && p.APIKeyEnv != "" {
			ck.add(key("api_key_env"), unused)
		}
		if !ck.skip(key("temperature")) && p.Temperature != 0 {
			ck.add(key("temperature"), unused)
		}
	} else {
		if k := key("base_url"); !ck.skip(k) && !isHTTPURL(p.BaseURL) {
			ck.add(k, "%s is not an http(s) URL", quote(p.BaseURL))
		}
		if k := key("api_key_env"); !ck.skip(k) && p.APIKeyEnv != "" && !isEnvName(p.APIKeyEnv) {
			ck.add(k, msgNotAKey)
		}
		if k := key("temperature"); !ck.skip(k) && !(p.Temperature >= 0 && p.Temperature <= 2) {
			ck.add(k, "%s is outside [0, 2]", num(p.Temperature))
		}
	}

	// Any positive window is taken: max_output_tokens is a ceiling, and the compactor sizes
	// each request's answer to the window (a provider too small to be useful is skipped at run
	// time with an attempt of outcome skipped_window).
	if p.ContextWindow == WindowAuto {
		if k := key("context_window"); !ck.skip(k) && extractive {
			ck.add(k, "auto reads the window from a server: type extractive has none")
		}
	} else {
		ck.atLeast1(key("context_window"), int(p.ContextWindow))
	}
	ck.atLeast1(key("concurrency"), p.Concurrency)
	ck.atLeast1(key("max_output_tokens"), p.MaxOutputTokens)
	ck.positive(key("timeout"), p.Timeout)
	ck.atLeast1(key("max_attempts"), p.MaxAttempts)
	ck.positive(key("max_wait"), p.MaxWait)
	if k := key("price_per_mtok"); extractive && p.PricePerMTok != nil && !ck.skip(k) {
		ck.add(k, "not used by type extractive: the offline summarizer is free")
	} else {
		ck.validatePrice(k, p.PricePerMTok)
	}
	if ck.positive(key("cooldown"), p.Cooldown) && !ck.skip(key("max_cooldown")) && p.MaxCooldown < p.Cooldown {
		ck.pair(key("max_cooldown"), key("cooldown"),
			"%s must be at least cooldown (%s)", "%s must not exceed max_cooldown (%s)",
			p.MaxCooldown.String(), p.Cooldown.String())
	}
}

func (ck *checker) validateServe(s Serve) {
	if k := "serve.listen"; !ck.skip(k) && s.Listen != "" {
		if host, port, err := net.SplitHostPort(s.Listen); err != nil || port == "" {
			ck.add(k, "%s is not an address: want HOST:PORT, e.g. %s", quote(s.Listen), DefaultListen)
		} else if strings.ContainsAny(host, " /") {
			ck.add(k, "%s: %s is not a host", quote(s.Listen), quote(host))
		}
	}
	if k := "serve.upstream"; !ck.skip(k) && s.Upstream != "" && !isHTTPURL(s.Upstream) {
		ck.add(k, "%s is not an http(s) URL (the model's base URL, ending in /v1)", quote(s.Upstream))
	}
	ck.validatePrice("serve.price_per_mtok", s.PricePerMTok)
	ck.ratio("serve.notice.at_ratio", s.Notice.AtRatio)
	for _, k := range []struct{ key, v string }{{"serve.upstream_key_env", s.UpstreamKeyEnv}, {"serve.token_env", s.TokenEnv}} {
		if !ck.skip(k.key) && k.v != "" && !isEnvName(k.v) {
			ck.add(k.key, msgNotAKey)
		}
	}
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != ""
}
