package redact

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// gitleaksTOML is gitleaks' default rule set, as data (see gitleaks/SOURCE for its version;
// scripts/refresh-gitleaks brings a newer release).
//
//go:embed gitleaks/gitleaks.toml
var gitleaksTOML []byte

// glFile is the part of a gitleaks config the redactor reads. Keys it does not know make
// compiling the rule set fail (see compileGitleaks): a newer release that adds a way to match
// must be read, not silently ignored.
type glFile struct {
	Title      string      `toml:"title"`
	MinVersion string      `toml:"minVersion"`
	Allowlist  glAllowlist `toml:"allowlist"`
	Rules      []glRule    `toml:"rules"`
}

type glRule struct {
	ID          string        `toml:"id"`
	Description string        `toml:"description"`
	Regex       string        `toml:"regex"`
	Entropy     float64       `toml:"entropy"`
	SecretGroup int           `toml:"secretGroup"`
	Keywords    []string      `toml:"keywords"`
	Path        string        `toml:"path"`
	Tags        []string      `toml:"tags"`
	Allowlists  []glAllowlist `toml:"allowlists"`
}

type glAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`   // "OR" (default) or "AND"
	RegexTarget string   `toml:"regexTarget"` // "secret" (default), "match" or "line"
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
}

// glRules is the compiled rule set.
type glRules struct {
	ids []string // every rule of the file, in its order
	// patterns are the rules with a regular expression (path-only rules match files, not
	// text), as they run: anchored at their keywords when the rule allows it (see anchorAt),
	// else unanchored; full are the same rules unanchored, as the file writes them.
	patterns, full []*pattern
	// keyed indexes patterns by the prefilter's pseudo-patterns of keywords (-1 for the
	// pseudo-patterns of first literals); litAt indexes, by pattern, the pseudo-pattern of
	// its first literals, -1 when it runs unanchored; always are the patterns without
	// keywords, run on every text.
	keyed  []int
	litAt  []int
	always []int
	// both scans for the built-in patterns' anchors (first, in builtins' order), then for the
	// prefilter's pseudo-patterns (keywords and first literals, as keyed and litAt index them).
	both *scanner
}

// allowRule is a compiled allowlist: a finding it allows is not a secret.
type allowRule struct {
	and       bool
	target    string
	regexes   []*regexp.Regexp
	stopWords []string
	never     bool // an AND list with a path or commit condition: text has neither
}

// gitleaksRules compiles the embedded rule set at first use.
var gitleaksRules = sync.OnceValue(func() *glRules {
	g, err := compileGitleaks(gitleaksTOML)
	if err != nil {
		panic("redact: the embedded gitleaks rule set: " + err.Error()) // TestGitleaksRulesMatchFile
	}
	return g
})

// compileGitleaks compiles a gitleaks config: each rule's regular expression, its keywords
// as the prefilter (one scan of the text finds every keyword of every rule, ASCII case
// folded, as gitleaks' Aho-Corasick pass does; a rule whose keywords are absent is not run),
// its entropy threshold, its secret group and its allowlists, and the global allowlist.
func compileGitleaks(data []byte) (*glRules, error) {
	var f glFile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, err
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("keys this redactor does not read: %v", un)
	}
	global, err := compileAllow([]glAllowlist{f.Allowlist})
	if err != nil {
		return nil, fmt.Errorf("global allowlist: %w", err)
	}
	g := &glRules{}
	var pre []*pattern
	for _, r := range f.Rules {
		if r.ID == "" || slices.Contains(g.ids, r.ID) {
			return nil, fmt.Errorf("rule %q: missing or repeated id", r.ID)
		}
		g.ids = append(g.ids, r.ID)
		if r.Regex == "" {
			if r.Path == "" {
				return nil, fmt.Errorf("rule %q: neither regex nor path", r.ID)
			}
			continue
		}
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.ID, err)
		}
		if r.SecretGroup > re.NumSubexp() {
			return nil, fmt.Errorf("rule %q: secretGroup %d of %d groups", r.ID, r.SecretGroup, re.NumSubexp())
		}
		allow, err := compileAllow(r.Allowlists)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.ID, err)
		}
		p := &pattern{kind: strings.ReplaceAll(r.ID, "-", "_"), re: re}
		if r.SecretGroup > 0 {
			p.groups = []int{r.SecretGroup}
		} else {
			for i := 1; i <= re.NumSubexp(); i++ {
				p.groups = append(p.groups, i)
			}
		}
		p.valid = glValid(r.Entropy, slices.Concat(global, allow))
		full := *p
		g.full = append(g.full, &full)
		var lits []string
		if len(r.Keywords) > 0 {
			var a func() *regexp.Regexp
			var ok bool
			if a, lits, p.wordStart, ok = anchorAt(re); ok {
				p.re, p.lazy, p.window = nil, a, -1
				if r.ID == "generic-api-key" {
					p.pre = genericOperator
				}
			}
		}
		g.patterns = append(g.patterns, p)
		if len(r.Keywords) == 0 {
			g.always = append(g.always, len(g.patterns)-1)
			g.litAt = append(g.litAt, -1)
			continue
		}
		k := &pattern{fold: true}
		for _, w := range r.Keywords {
			if w = strings.ToLower(w); len(w) >= 2 && !slices.Contains(k.anchors, w) {
				k.anchors = append(k.anchors, w)
			}
		}
		if len(k.anchors) < len(r.Keywords) {
			return nil, fmt.Errorf("rule %q: a keyword shorter than two bytes", r.ID)
		}
		pre = append(pre, k)
		g.keyed = append(g.keyed, len(g.patterns)-1)
		g.litAt = append(g.litAt, -1)
		if lits != nil {
			// The anchored rule is tried where its first literal occurs, once a keyword is there.
			pre = append(pre, &pattern{fold: true, anchors: lits})
			g.keyed = append(g.keyed, -1)
			g.litAt[len(g.litAt)-1] = len(pre) - 1
		}
	}
	// One scan finds the anchors of the built-in patterns and gitleaks' keywords and
	// literals together.
	g.both = newScanner(slices.Concat(builtins, pre)).withEvasions()
	return g, nil
}

func compileAllow(lists []glAllowlist) ([]allowRule, error) {
	var out []allowRule
	for _, a := range lists {
		if len(a.Regexes) == 0 && len(a.StopWords) == 0 && len(a.Paths) == 0 && len(a.Commits) == 0 {
			continue
		}
		ar := allowRule{and: strings.EqualFold(a.Condition, "AND"), target: a.RegexTarget}
		switch a.RegexTarget {
		case "", "secret", "match", "line":
		default:
			return nil, fmt.Errorf("allowlist: unknown regexTarget %q", a.RegexTarget)
		}
		if ar.and && (len(a.Paths) > 0 || len(a.Commits) > 0) {
			ar.never = true
		}
		for _, src := range a.Regexes {
			re, err := regexp.Compile(src)
			if err != nil {
				return nil, fmt.Errorf("allowlist: %w", err)
			}
			ar.regexes = append(ar.regexes, re)
		}
		for _, w := range a.StopWords {
			ar.stopWords = append(ar.stopWords, strings.ToLower(w))
		}
		out = append(out, ar)
	}
	return out, nil
}

// glValid returns the check of a gitleaks finding: its secret's Shannon entropy above the
// rule's threshold, and no allowlist allowing it.
func glValid(entropy float64, allow []allowRule) func(text string, m []int, s, e int) bool {
	return func(text string, m []int, s, e int) bool {
		secret := text[s:e]
		if entropy > 0 && shannonEntropy(secret) <= entropy {
			return false
		}
		for _, a := range allow {
			if a.allows(text, m, secret) {
				return false
			}
		}
		return true
	}
}

func (a allowRule) allows(text string, m []int, secret string) bool {
	if a.never {
		return false
	}
	target := secret
	switch a.target {
	case "match":
		target = text[m[0]:m[1]]
	case "line":
		ls := strings.LastIndexByte(text[:m[0]], '\n') + 1
		le := strings.IndexByte(text[m[1]:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += m[1]
		}
		target = text[ls:le]
	}
	byRegex := slices.ContainsFunc(a.regexes, func(re *regexp.Regexp) bool { return re.MatchString(target) })
	lower := strings.ToLower(secret)
	byWord := slices.ContainsFunc(a.stopWords, func(w string) bool { return strings.Contains(lower, w) })
	if a.and {
		return (len(a.regexes) == 0 || byRegex) && (len(a.stopWords) == 0 || byWord)
	}
	return byRegex || byWord
}

// shannonEntropy is the entropy of s in bits per byte, as gitleaks computes it.
func shannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// runFound appends to out the passes of the rules that may match a text, in the file's
// order: those whose keyword the text holds (anchored at the keywords when the rule allows
// it), and those without keywords. f is what a scan of the text found, g's pseudo-patterns
// from index off on; hits is scratch space, returned for the next text.
func (g *glRules) runFound(f *found, off int, out []pass, hits []int) ([]pass, []int) {
	hits = append(hits[:0], g.always...)
	for _, k := range f.touched {
		if k >= off && g.keyed[k-off] >= 0 {
			hits = append(hits, g.keyed[k-off])
		}
	}
	slices.Sort(hits)
	for _, i := range slices.Compact(hits) {
		if k := g.litAt[i]; k >= 0 {
			out = append(out, pass{p: g.patterns[i], starts: f.starts[off+k]})
		} else {
			out = append(out, pass{p: g.patterns[i], all: true})
		}
	}
	return out, hits
}

// anchorAt returns the rule's regular expression anchored at its start, and the literals
// every match starts with, when it has them (after an optional leading run such as
// gitleaks' [\w.-]{0,50}?, which only widens the match, never the secret): such a rule is
// tried only where one of them occurs, not over the whole text. Most of gitleaks' rules
// have that shape. wordStart reports a leading \b, which the anchored expression checks on
// the byte before (see pattern.find).
//
// The anchored expression is compiled at its first use (printing the trimmed expression
// and compiling it again is two thirds of compiling the rule set): a rule whose keywords
// never occur costs its parse only. TestGitleaksAnchoredCompile compiles every one.
func anchorAt(re *regexp.Regexp) (anchored func() *regexp.Regexp, lits []string, wordStart, ok bool) {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, nil, false, false
	}
	if t.Op == syntax.OpConcat && len(t.Sub) > 1 {
		if first := t.Sub[0]; (first.Op == syntax.OpRepeat || first.Op == syntax.OpStar) && first.Min == 0 && !hasCapture(first) {
			t.Sub = t.Sub[1:]
		}
		if t.Sub[0].Op == syntax.OpWordBoundary {
			wordStart = true
		}
	}
	if lits, ok = firstLiterals(t); !ok {
		return nil, nil, false, false
	}
	for i, l := range lits {
		if lits[i] = strings.ToLower(l); len(l) < 2 {
			return nil, nil, false, false
		}
	}
	// The leading run taken off holds no group, and a parsed expression prints as one that
	// parses back the same: the anchored one compiles, with the rule's groups.
	n := re.NumSubexp()
	a := sync.OnceValue(func() *regexp.Regexp {
		a := regexp.MustCompile(`^(?:` + t.String() + `)`)
		if a.NumSubexp() != n {
			panic("redact: anchored rule " + re.String() + ": its groups changed")
		}
		return a
	})
	return a, slices.Compact(lits), wordStart, true
}

// firstLiterals returns the literals every match of t starts with, after zero-width
// assertions; false when a match may start otherwise.
func firstLiterals(t *syntax.Regexp) ([]string, bool) {
	ls, _, ok := literals(t)
	return ls, ok
}

// literals returns the strings every match of t starts with, and whether t matches exactly
// one of them (complete), so that what follows can be appended. Consecutive parts are
// joined until each literal is at least two bytes long; a class of up to four characters
// counts as their alternation.
func literals(t *syntax.Regexp) (ls []string, complete, ok bool) {
	switch t.Op {
	case syntax.OpLiteral:
		return []string{string(t.Rune)}, true, len(t.Rune) > 0
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(t.Rune); i += 2 {
			for r := t.Rune[i]; r <= t.Rune[i+1]; r++ {
				if out = append(out, string(r)); len(out) > 4 {
					return nil, false, false
				}
			}
		}
		return out, true, len(out) > 0
	case syntax.OpCapture:
		return literals(t.Sub[0])
	case syntax.OpAlternate:
		complete = true
		for _, s := range t.Sub {
			l, c, ok := literals(s)
			if !ok {
				return nil, false, false
			}
			ls, complete = append(ls, l...), complete && c
		}
		return ls, complete, true
	case syntax.OpConcat:
		ls, complete = []string{""}, true
		started := false
		for _, s := range t.Sub {
			switch s.Op {
			case syntax.OpWordBoundary, syntax.OpBeginLine, syntax.OpBeginText:
				if !started {
					continue
				}
			}
			started = true
			short := slices.ContainsFunc(ls, func(l string) bool { return len(l) < 2 })
			if !short || !complete {
				return ls, false, true
			}
			next, c, ok := literals(s)
			if !ok {
				if ls[0] == "" {
					return nil, false, false
				}
				return ls, false, true
			}
			var joined []string
			for _, a := range ls {
				for _, b := range next {
					joined = append(joined, a+b)
				}
			}
			if len(joined) > 64 {
				return ls, false, ls[0] != ""
			}
			ls, complete = joined, c
		}
		return ls, complete, ls[0] != ""
	}
	return nil, false, false
}

func hasCapture(t *syntax.Regexp) bool {
	if t.Op == syntax.OpCapture {
		return true
	}
	return slices.ContainsFunc(t.Sub, hasCapture)
}

// genericOperator is a necessary condition of generic-api-key's expression tried at st,
// the start of its keyword, checked before it: the keyword and what follows it up to the
// assignment are [ \t\w.-] (the keyword, at most 10 bytes, then at most 20), then at most
// three of [\s'"], then an operator (= > : | , ?), and within the next nine bytes (the rest
// of an operator of at most four, then at most five of [\x60'"\s=]) starts a value of ten
// bytes or more of [\w.=+/-]. The expression's engine pays some microseconds at each
// "key", "token" or "auth" of a text; this test, a few nanoseconds.
func genericOperator(text string, st int) bool {
	j := st
	for j < len(text) && j-st < 31 && (isWordByte(text[j]) || text[j] == ' ' || text[j] == '\t' || text[j] == '.' || text[j] == '-') {
		j++
	}
	if j-st >= 31 {
		return true // a long run: leave it to the expression
	}
	for k := 0; k < 3 && j < len(text) && strings.IndexByte(" \t\n\r\f\v'\"", text[j]) >= 0; k++ {
		j++
	}
	if j >= len(text) || strings.IndexByte("=>:|,?", text[j]) < 0 {
		return false
	}
	run := 0
	for k := j + 1; k < len(text) && k < j+10+10; k++ {
		if !genericValueByte(text[k]) {
			if k >= j+10 {
				return false // a run of ten can no longer start by j+9
			}
			run = 0
			continue
		}
		if run++; run >= 10 {
			return true
		}
	}
	return false
}

// genericValueByte reports the bytes of either form of generic-api-key's value:
// [\w.=-] and [a-z0-9+/] (case folded).
func genericValueByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '=' || c == '-' || c == '+' || c == '/'
}
