package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveScan is what scanner.scan must return: every position of every anchor, compared
// at each byte of the text.
func naiveScan(s *scanner, text string) [][]int {
	out := make([][]int, len(s.ps))
	b := []byte(text)
	for i, c := range b {
		b[i] = lowerByte(c)
	}
	lower := string(b)
	for pi, p := range s.ps {
		in := text
		if p.fold {
			in = lower // folded anchors are lower case
		}
		for _, a := range p.anchors {
			for from := 0; ; {
				k := strings.Index(in[from:], a)
				if k < 0 {
					break
				}
				pos := from + k
				from = pos + 1
				st := pos - p.back
				if p.start != nil {
					st = p.start(text, pos)
				}
				if st >= 0 {
					out[pi] = append(out[pi], st)
				}
			}
		}
		slices.Sort(out[pi])
		out[pi] = slices.Compact(out[pi])
	}
	return out
}

// TestScanFindsEveryAnchor compares the scan with a byte-by-byte search, over the recorded
// conversations and over every anchor alone, at the start, the end and the middle of a
// text, in upper case when its pattern folds case, and glued to its neighbours.
func TestScanFindsEveryAnchor(t *testing.T) {
	s := gitleaksRules().both
	texts := testdataTexts(t)
	var glued strings.Builder
	for _, p := range s.ps {
		for _, a := range p.anchors {
			forms := []string{a}
			if p.fold {
				forms = append(forms, strings.ToUpper(a))
			}
			for _, f := range forms {
				texts = append(texts, f, f+"=x", "x"+f, "a b "+f+" c", f[:len(f)-1], f[1:]+f)
				glued.WriteString(f)
			}
		}
	}
	texts = append(texts, glued.String(), "", "a", "ab", "abc")
	// One found reused from text to text, as Redact reuses it: what an earlier text touched
	// must not stay, and touched must name exactly the patterns with starts.
	var reused found
	for _, text := range texts {
		s.scanInto(text, &reused)
		got, want := reused.starts, naiveScan(s, text)
		var touched []int
		for pi := range want {
			if !slices.Equal(got[pi], want[pi]) && !(len(got[pi]) == 0 && len(want[pi]) == 0) {
				t.Fatalf("pattern %d (%q) in %.60q: scan found %v, want %v", pi, s.ps[pi].anchors, text, got[pi], want[pi])
			}
			if len(want[pi]) > 0 {
				touched = append(touched, pi)
			}
		}
		if !slices.Equal(reused.touched, touched) && !(len(touched) == 0 && len(reused.touched) == 0) {
			t.Fatalf("in %.60q: touched %v, want %v", text, reused.touched, touched)
		}
	}
}

// TestEvasiveAt checks that reading only the places the scan finds gives what reading the
// whole text gives, for both scanners and texts made of the bytes that start an evasion and
// those that complete one.
func TestEvasiveAt(t *testing.T) {
	parts := []string{"\\", "u", "x", "U", "0070", "7", "%", "2F", "g", "&", "#", "112", "quot", ";",
		"a", " ", "\u200b", "ｐ", "р", "é", "\xff", "\xe2", "\x80", "中", "\\u0070", "&#x70;", "%70"}
	rng := rand.New(rand.NewPCG(1, 2))
	trues := 0
	for n := range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		want := evasive(text)
		for _, s := range []*scanner{builtinScan, gitleaksRules().both} {
			var f found
			s.scanInto(text, &f)
			if got := evasiveAt(text, f.ev); got != want {
				t.Fatalf("text %d %q: evasiveAt %v, evasive %v", n, text, got, want)
			}
		}
		if want {
			trues++
		}
	}
	if trues < 1000 || trues > 19000 {
		t.Fatalf("%d of 20000 texts evasive: the texts test too little", trues)
	}
}

// TestRedactorsShareScratch: redactors of both scanners (the built-in patterns alone, as the
// split check runs them, and with gitleaks' rules) take their scratch from one pool; each
// must read only what its own scan found (a long text's evasion starts, read for a short
// one, were out of its range).
func TestRedactorsShareScratch(t *testing.T) {
	full, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	own := &Redactor{own: true}
	long := strings.Repeat("plain words ", 60) + "caf\u00e9 p\u200basswor\u200bd: hunter2 \u00e9"
	short := "sk-\u200bproj abc"
	for range 50 {
		for _, c := range []struct {
			r    *Redactor
			text string
		}{{full, long}, {own, short}, {own, long}, {full, short}} {
			got, _ := c.r.Redact(c.text)
			if again, _ := c.r.Redact(c.text); got != again {
				t.Fatalf("%q: %q, then %q", c.text, got, again)
			}
		}
	}
}
