package redact

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestPassesOfTouchedBuiltins: passes lists the built-in patterns the scan found a start of,
// and those that scan the whole text, in builtins' order, as a walk over every built-in
// pattern would, for the secrets of the gitleaks corpus, the benign lines and a few others,
// with the default redactor, one with a pattern of its own, an unfiltered one and one
// without gitleaks' rules.
func TestPassesOfTouchedBuiltins(t *testing.T) {
	texts := []string{"", "a", "message 123 about order W000123 and flight HAT123", "password=hunter2 and ghp_" + "0123456789abcdefghijklmnopqrstuvwxyzAB",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----"}
	f, err := os.Open("testdata/gitleaks-secrets.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, c.Text)
	}
	benign, err := os.ReadFile("testdata/benign.txt")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, strings.Split(string(benign), "\n")...)
	own, err := New([]string{`secret-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	def, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	unfiltered, builtinOnly := *def, *def
	unfiltered.unfiltered, builtinOnly.own = true, true
	touched := 0
	for _, r := range []*Redactor{def, own, &unfiltered, &builtinOnly} {
		buf := new(scratch)
		for _, text := range texts {
			got := slices.Clone(r.passes(text, buf))
			f := r.found(buf)
			var want []pass
			for i, p := range builtins {
				if len(f.starts[i]) > 0 || p.scanAll != nil {
					want = append(want, pass{p: p, starts: f.starts[i]})
				}
			}
			if len(got) < len(want) {
				t.Fatalf("%q: %d passes, want at least the %d built-in ones", text, len(got), len(want))
			}
			for k, w := range want {
				if g := got[k]; g.p != w.p || !slices.Equal(g.starts, w.starts) || g.all != w.all {
					t.Fatalf("%q: pass %d is %s at %v, want %s at %v", text, k, g.p.kind, g.starts, w.p.kind, w.starts)
				}
			}
			if len(want) > len(scanAllBuiltins) {
				touched++
			}
		}
	}
	if touched < 100 {
		t.Fatalf("only %d texts touched a built-in pattern", touched)
	}
}
