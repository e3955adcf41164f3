package redact

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/gitleaks-secrets.jsonl from the rule set")

// gitleaksCorpus is where the secrets generated from gitleaks' rules are written, one JSON
// object a line, for the tests of other packages (compact's: none may reach a provider).
const gitleaksCorpus = "testdata/gitleaks-secrets.jsonl"

// GitleaksExample is one line of gitleaksCorpus: a text the rule finds a secret in.
type gitleaksExample struct {
	Rule   string `json:"rule"`
	Text   string `json:"text"`
	Secret string `json:"secret"`
}

// gitleaksExamples generates one example a rule with a regex, as TestGitleaksRuleCoverage does.
func gitleaksExamples() []gitleaksExample {
	g := gitleaksRules()
	keywords := make([][]string, len(g.patterns))
	for k, i := range g.keyed {
		if i >= 0 {
			keywords[i] = g.both.ps[len(builtins)+k].anchors
		}
	}
	var out []gitleaksExample
	for i, p := range g.full {
		if ex, secret, ok := ruleExample(p, keywords[i], uint64(i)); ok {
			out = append(out, gitleaksExample{Rule: p.kind, Text: ex, Secret: secret})
		}
	}
	return out
}

// TestGitleaksCorpusFile: testdata/gitleaks-secrets.jsonl is what the generator makes from the
// rule set (go test ./redact -run TestGitleaksCorpusFile -update rewrites it), and the redactor
// leaves no secret of it in its text.
func TestGitleaksCorpusFile(t *testing.T) {
	var b bytes.Buffer
	exs := gitleaksExamples()
	for _, ex := range exs {
		line, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if *update {
		if err := os.WriteFile(gitleaksCorpus, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(gitleaksCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("%s is not what the rule set generates: go test ./redact -run TestGitleaksCorpusFile -update", gitleaksCorpus)
	}
	if len(exs) < 200 {
		t.Fatalf("%d examples generated, want at least 200", len(exs))
	}
}

// TestGitleaksCorpusQuoted: each secret of the corpus is redacted as it is, in prose, quoted
// in a JSON string (a tool call's arguments: its quotes become \") and quoted twice (JSON in
// JSON). Before string escapes were undone for the rules, 4 of 221 quoted ones were left.
func TestGitleaksCorpusQuoted(t *testing.T) {
	r, _ := New(nil)
	left := 0
	exs := gitleaksExamples()
	for _, ex := range exs {
		once, _ := json.Marshal(map[string]string{"input": ex.Text})
		twice, _ := json.Marshal(map[string]string{"args": string(once)})
		for _, text := range []string{ex.Text, "Use this: " + ex.Text, string(once), string(twice)} {
			out, _ := r.Redact(text)
			q, _ := json.Marshal(ex.Secret)
			if bytes.Contains([]byte(out), []byte(ex.Secret)) || bytes.Contains([]byte(out), q[1:len(q)-1]) {
				left++
				t.Errorf("gitleaks %s: %q -> %q", ex.Rule, text, out)
			}
		}
	}
	t.Logf("%d of %d texts (%d secrets, 4 forms) keep their secret", left, 4*len(exs), len(exs))
}
