package tokenizer

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The reference implementation of tokenizer.json does not use the Unicode version of Go's
// tables (15.0): its regular expressions (Oniguruma) know Unicode 16.0, and its normalizer knows
// Unicode 9.0. The tables of hfunicode_tables.go (generated from the Unicode Character Database
// of each version) make the encoder of HF files split and normalize as the reference does.

// catRange is a range of code points and their general category.
type catRange struct {
	lo, hi rune
	cat    string
}

// runeRange is a range of code points.
type runeRange struct{ lo, hi rune }

// hfClasses is the class table of the split patterns with Unicode 16.0's general categories:
// the unicode package's, with the code points whose category Unicode 16.0 changed (those it
// assigned) set from categories16. White space is the same in both versions.
var hfClasses = sync.OnceValue(func() *classTable {
	return buildClassTable(func(flat []uint8) {
		for _, r := range categories16 {
			for c := r.lo; c <= r.hi; c++ {
				flat[c] = flat[c]&^(cUpper|cLower|cL|cN) | categoryClasses(r.cat)
			}
		}
	})
})

// categoryClasses returns the classes a general category gives (see classesOf).
func categoryClasses(cat string) uint8 {
	switch cat {
	case "Lu", "Lt":
		return cUpper | cL
	case "Ll":
		return cLower | cL
	case "Lm", "Lo":
		return cUpper | cLower | cL
	case "Mn", "Mc", "Me":
		return cUpper | cLower
	case "Nd", "Nl", "No":
		return cN
	}
	return 0
}

// normalizer is one Unicode normalization form as the reference applies it.
type normalizer struct {
	form   norm.Form
	decomp norm.Form // NFD for the canonical forms, NFKD for the compatibility forms
}

func newNormalizer(f norm.Form) normalizer {
	d := norm.NFD
	if f == norm.NFKC || f == norm.NFKD {
		d = norm.NFKD
	}
	return normalizer{form: f, decomp: d}
}

// placeholder stands in for the code points normalization must leave alone (see inert): a
// starter that decomposes and composes with nothing, in every version.
const placeholder = '\U0010FFFF'

// String returns s normalized as the reference normalizes it. Code points Unicode 9.0 does not
// assign are left as they are, as its tables leave them (unknown code points are starters that
// decompose and compose with nothing). And golang.org/x/text/unicode/norm composes a starter
// outside the Basic Multilingual Plane with a following mark as if it were the starter of its
// lower 16 bits (its composition keys are clipped: U+10041 U+0301 becomes U+00C1); such
// starters compose with nothing. Both are replaced by placeholder while the text is
// normalized, then put back in order (placeholder is itself one of them, so every placeholder
// of the result is one of them).
func (n normalizer) String(s string) string {
	if n.form.IsNormalString(s) {
		return s
	}
	var held []rune
	var b strings.Builder
	for i, r := range s {
		if r >= utf8.RuneSelf && n.inert(r) {
			if held == nil {
				b.Grow(len(s))
				b.WriteString(s[:i])
			}
			held = append(held, r)
			b.WriteRune(placeholder)
		} else if held != nil {
			b.WriteRune(r)
		}
	}
	if held == nil {
		return n.form.String(s)
	}
	out := n.form.String(b.String())
	if strings.Count(out, string(placeholder)) != len(held) {
		panic("tokenizer: normalization changed the number of placeholders")
	}
	var r strings.Builder
	r.Grow(len(out))
	for _, c := range out {
		if c == placeholder {
			c, held = held[0], held[1:]
		}
		r.WriteRune(c)
	}
	return r.String()
}

// inert reports whether r is kept out of normalization: Unicode 9.0 does not assign it, or it
// is a starter outside the Basic Multilingual Plane that neither decomposes (in n's form) nor is
// part of a canonical composition.
func (n normalizer) inert(r rune) bool {
	if unassigned9Rune(r) {
		return true
	}
	if r < 0x10000 {
		return false
	}
	var buf [utf8.UTFMax]byte
	if p := n.decomp.Properties(buf[:utf8.EncodeRune(buf[:], r)]); p.CCC() != 0 || p.Decomposition() != nil {
		return false
	}
	i := sort.Search(len(astralCompositionParts), func(i int) bool { return astralCompositionParts[i] >= r })
	return i == len(astralCompositionParts) || astralCompositionParts[i] != r
}

// unassigned9Rune reports whether Unicode 9.0 does not assign r.
func unassigned9Rune(r rune) bool {
	i := sort.Search(len(unassigned9), func(i int) bool { return unassigned9[i].hi >= r })
	return i < len(unassigned9) && unassigned9[i].lo <= r
}
