package redact

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestGitleaksRulesMatchFile: the compiled rule set is the file's, whole: the same rule ids in
// the same order, each rule with a regex compiled, and the count and version SOURCE states.
// It fails when the file is changed by hand or refreshed without SOURCE, or when a rule is
// dropped while compiling.
func TestGitleaksRulesMatchFile(t *testing.T) {
	src, err := os.ReadFile("gitleaks/SOURCE")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for line := range strings.Lines(string(src)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			fields[k] = v
		}
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(fields["version"]) {
		t.Errorf("SOURCE states no release version: %q", fields["version"])
	}
	// The rules as a reader of the file sees them, without a TOML parser.
	var ids []string
	withRegex := 0
	sc := bufio.NewScanner(bytes.NewReader(gitleaksTOML))
	inRule := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "[[rules]]":
			inRule = true
		case strings.HasPrefix(line, "["):
			inRule = false
		case inRule && strings.HasPrefix(line, "id = "):
			id, err := strconv.Unquote(strings.TrimPrefix(line, "id = "))
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			ids = append(ids, id)
		case inRule && strings.HasPrefix(line, "regex = "):
			withRegex++
		}
	}
	if want, err := strconv.Atoi(fields["rules"]); err != nil || want != len(ids) {
		t.Errorf("SOURCE states %q rules, the file holds %d", fields["rules"], len(ids))
	}
	g := gitleaksRules()
	if !slices.Equal(g.ids, ids) {
		t.Errorf("compiled rule ids differ from the file's:\ncompiled %d: %v\nfile %d: %v", len(g.ids), g.ids, len(ids), ids)
	}
	if len(g.patterns) != withRegex || len(g.full) != withRegex {
		t.Errorf("%d rules compiled, the file has %d with a regex", len(g.patterns), withRegex)
	}
	keyed := 0
	for _, i := range g.keyed {
		if i >= 0 {
			keyed++
		}
	}
	if keyed+len(g.always) != len(g.patterns) {
		t.Errorf("prefilter: %d keyed + %d always of %d rules", keyed, len(g.always), len(g.patterns))
	}
}

// TestCompileGitleaksRejects: a rule set the redactor cannot read whole is an error, not a
// smaller rule set.
// TestGitleaksAnchoredCompile compiles every rule's anchored expression, which Redact
// compiles at the rule's first use: each compiles, with the groups of the rule's own.
func TestGitleaksAnchoredCompile(t *testing.T) {
	g, err := compileGitleaks(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	lazy := 0
	for i, p := range g.patterns {
		if p.lazy == nil {
			continue
		}
		lazy++
		if p.re != nil {
			t.Errorf("%s: compiled before its first use", p.kind)
		}
		if a := p.lazy(); a.NumSubexp() != g.full[i].re.NumSubexp() || !strings.HasPrefix(a.String(), "^") {
			t.Errorf("%s: anchored %q has %d groups, the rule %d", p.kind, a, a.NumSubexp(), g.full[i].re.NumSubexp())
		}
	}
	if lazy < len(g.patterns)/2 {
		t.Errorf("only %d of %d rules anchored", lazy, len(g.patterns))
	}
	t.Logf("%d of %d rules anchored, compiled at first use", lazy, len(g.patterns))
}

func TestCompileGitleaksRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown key":     "[[rules]]\nid = \"a\"\nregex = '''ab+'''\nkeywords = [\"ab\"]\nrequired = 1\n",
		"bad regex":       "[[rules]]\nid = \"a\"\nregex = '''(ab'''\n",
		"repeated id":     "[[rules]]\nid = \"a\"\nregex = '''ab'''\n[[rules]]\nid = \"a\"\nregex = '''cd'''\n",
		"short keyword":   "[[rules]]\nid = \"a\"\nregex = '''ab'''\nkeywords = [\"a\"]\n",
		"bad secretGroup": "[[rules]]\nid = \"a\"\nregex = '''(a)b'''\nsecretGroup = 2\n",
		"bad target":      "[[rules]]\nid = \"a\"\nregex = '''ab'''\n[[rules.allowlists]]\nregexTarget = \"file\"\nregexes = ['''x''']\n",
	} {
		if _, err := compileGitleaks([]byte(doc)); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// TestGitleaksRuleCoverage generates one example for each rule of the gitleaks rule set from
// its regular expression (one the rule itself accepts: its match, entropy and allowlists),
// redacts it, and measures how many are redacted: at least 95%. Every rule whose example
// is not redacted must be listed, with its reason, in docs/redaction.md.
func TestGitleaksRuleCoverage(t *testing.T) {
	r, _ := New(nil)
	g := gitleaksRules()
	readme, err := os.ReadFile("../docs/redaction.md")
	if err != nil {
		t.Fatal(err)
	}
	var missed, nogen []string
	covered, own := 0, 0
	keywords := make([][]string, len(g.patterns))
	for k, i := range g.keyed {
		if i >= 0 {
			keywords[i] = g.both.ps[len(builtins)+k].anchors
		}
	}
	for i, p := range g.full {
		ex, secret, ok := ruleExample(p, keywords[i], uint64(i))
		if !ok {
			nogen = append(nogen, p.kind)
			continue
		}
		if out, _ := (&Redactor{own: true}).Redact(ex); !strings.Contains(out, secret) {
			own++
		}
		out, _ := r.Redact(ex)
		if strings.Contains(out, secret) {
			missed = append(missed, p.kind)
			t.Logf("gitleaks %s: not redacted: %q -> %q", p.kind, ex, out)
			continue
		}
		covered++
	}
	share := float64(covered) / float64(len(g.patterns))
	t.Logf("gitleaks rules: %d of %d generated examples redacted (%.1f%%), %d by our own rules alone; no example generated for %v",
		covered, len(g.patterns), 100*share, own, nogen)
	if share < 0.95 {
		t.Errorf("%.1f%% of gitleaks' rules have their example redacted, under 95%%", 100*share)
	}
	for _, id := range slices.Concat(missed, nogen) {
		if !bytes.Contains(readme, []byte("`"+strings.ReplaceAll(id, "_", "-")+"`")) {
			t.Errorf("rule %s is not covered and docs/redaction.md does not list it", id)
		}
	}
}

// ruleExample generates a text the rule p finds a secret in, and that secret. It tries
// several draws (repeat counts and characters), keeping the first the rule accepts.
// The text holds one of the rule's keywords, as a text the rule is run on must: when the
// generated string has none, "keyword: " is put before it.
func ruleExample(p *pattern, keywords []string, seed uint64) (text, secret string, ok bool) {
	re, err := syntax.Parse(p.re.String(), syntax.Perl)
	if err != nil {
		return "", "", false
	}
	re = re.Simplify()
	for try := range 40 {
		gen := &generator{rnd: rand.New(rand.NewPCG(seed, uint64(try))), try: try}
		var b strings.Builder
		gen.emit(&b, re)
		text = b.String()
		if len(keywords) > 0 && !slices.ContainsFunc(keywords, func(k string) bool { return strings.Contains(strings.ToLower(text), k) }) {
			text = keywords[try%len(keywords)] + ": " + text
		}
		m := p.re.FindStringSubmatchIndex(text)
		if m == nil {
			continue
		}
		s, e := m[0], m[1]
		if len(p.groups) > 0 {
			s = -1
			for _, g := range p.groups {
				if m[2*g] >= 0 && m[2*g] < m[2*g+1] {
					s, e = m[2*g], m[2*g+1]
					break
				}
			}
		}
		if s < 0 || (p.valid != nil && !p.valid(text, m, s, e)) {
			continue
		}
		return text, text[s:e], true
	}
	return "", "", false
}

// generator walks a parsed regular expression and writes a string it matches.
type generator struct {
	rnd *rand.Rand
	try int
}

const genAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (g *generator) emit(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.pick(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		switch g.try % 3 {
		case 0:
			b.WriteByte('.') // an unescaped dot usually stands for one (hooks.slack.com)
		case 1:
			b.WriteByte(' ')
		default:
			b.WriteByte(genAlphabet[g.rnd.IntN(len(genAlphabet))])
		}
	case syntax.OpCapture:
		g.emit(b, re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.emit(b, s)
		}
	case syntax.OpAlternate:
		k := 0
		if g.try > 0 {
			k = g.rnd.IntN(len(re.Sub))
		}
		g.emit(b, re.Sub[k])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		n := lo
		if g.try > 0 && g.try%2 == 0 { // later draws grow open repeats, for entropy
			n = lo + g.try
			if hi >= 0 {
				n = min(n, hi)
			}
		}
		if n == 0 && g.try%4 == 3 && hi != 0 {
			n = 1
		}
		for range n {
			g.emit(b, re.Sub[0])
		}
	}
	// Assertions (^, $, \b) write nothing; a draw that breaks one does not match and another
	// is tried.
}

// pick chooses a character of the class (pairs of bounds), preferring letters and digits.
func (g *generator) pick(ranges []rune) rune {
	var good []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x80; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				good = append(good, r)
			}
		}
	}
	if len(good) > 0 {
		return good[g.rnd.IntN(len(good))]
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x80; r++ {
			if unicode.IsPrint(r) {
				return r
			}
		}
	}
	return ranges[0]
}

// BenchmarkRedactRuleSets measures the recorded conversations with the whole rule set and
// gitleaks' keyword prefilter (as Redact runs), without the prefilter (every gitleaks rule
// run on every text), and with our own rules alone.
func BenchmarkRedactRuleSets(b *testing.B) {
	var texts []string
	size := 0
	for _, f := range testdataFiles(b) {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, string(raw))
		size += len(raw)
	}
	gitleaksRules() // compiled once, before the clock starts
	for _, c := range []struct {
		name string
		r    *Redactor
	}{{"prefilter", &Redactor{}}, {"no-prefilter", &Redactor{unfiltered: true}}, {"own-rules", &Redactor{own: true}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			cpu0 := cpuNanos()
			for b.Loop() {
				for _, text := range texts {
					c.r.Redact(text)
				}
			}
			// On a shared machine the wall time holds other processes' turns; the CPU
			// time this process used does not (run with -cpu 1).
			if cpu := cpuNanos() - cpu0; cpu > 0 {
				b.ReportMetric(float64(size)*float64(b.N)/(float64(cpu)/1e9)/1e6, "cpu-MB/s")
			}
		})
	}
}

// BenchmarkCompileGitleaks is the start-up cost of the rule set, paid once at first use.
func BenchmarkCompileGitleaks(b *testing.B) {
	cpu0 := cpuNanos()
	for b.Loop() {
		if _, err := compileGitleaks(gitleaksTOML); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := cpuNanos() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	}
}

// TestGenericOperator checks the test run before generic-api-key's expression: it must hold
// wherever the expression matches at a keyword, and it turns away an assignment whose value
// is too short to be the rule's secret, which the expression would be run on before.
func TestGenericOperator(t *testing.T) {
	var p *pattern
	for _, q := range gitleaksRules().patterns {
		if q.kind == "generic_api_key" {
			p = q
		}
	}
	if p == nil || p.lazy == nil {
		t.Fatal("no anchored generic_api_key rule")
	}
	re := p.lazy()
	for _, text := range []string{`"key": "short"`, `"access": "all",`, `token = 42`, "auth:\n  - none"} {
		if genericOperator(text, 0) {
			t.Errorf("genericOperator(%q) = true", text)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := [][]string{
		{"key", "token", "secret", "api", "auth", "access", "passwd"},
		{"", "_id", " ", "\t", ".x-y", "_name_of_the_setting_here"},
		{"", " ", `"`, `'`, "\n", ` "`, `"  `},
		{"=", ">", ":=", "::=", ":::=", "||", ":", "=>", "?=", ",", ";", ""},
		{"", " ", `"`, "`", "=", `  "`, "\t'=", "     ", `"""""'`},
		{"", "x", "short", "abcdefghi", "abcdefghij", "A1b2C3d4E5f6", "a+b/c+d/e+f/", "q.w=e-r_t.y", "zzzz zzzzzzzzzz", "Xy8#pQ3rT6vW0", strings.Repeat("k", 40)},
		{"", `"`, ";", " ", "\n", `\n`, "#"},
	}
	matched := 0
	for range 20000 {
		var b strings.Builder
		for _, ps := range pieces {
			b.WriteString(ps[rng.IntN(len(ps))])
		}
		text := b.String()
		if re.MatchString(text) {
			matched++
			if !genericOperator(text, 0) {
				t.Fatalf("generic_api_key's expression matches %q, genericOperator turns it away", text)
			}
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d of the generated texts match the expression", matched)
	}
}
