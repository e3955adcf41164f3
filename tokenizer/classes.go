package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes of the split patterns, one bit each. A rune's classes come from the
// standard library's unicode tables, the same tables the reference regular expression engine
// (regexp2) uses for \p{..} and \s.
const (
	cUpper = 1 << iota // o200k [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower             // o200k [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cL                 // \p{L}
	cN                 // \p{N}
	cS                 // \s: unicode.IsSpace, as regexp2 defines \s without ECMAScript or RE2 options
	cNL                // \r or \n
)

// Derived classes:
//
//	[^\r\n\p{L}\p{N}] (the optional prefix of a word) is a rune with none of cL, cN, cNL;
//	[^\s\p{L}\p{N}] (punctuation and symbols) is a rune with none of cS, cL, cN.
const (
	notPrefix = cL | cN | cNL
	notPunct  = cS | cL | cN
)

// classTable maps every rune to its classes in two levels: blockIndex[r>>8] selects a
// 256-entry block of blocks (identical blocks are stored once).
type classTable struct {
	blockIndex [(unicode.MaxRune + 1) >> 8]uint16
	blocks     []uint8
}

var classes = sync.OnceValue(buildClasses)

// asciiClasses are the classes of the ASCII runes, kept apart for the fast path of at.
var asciiClasses = func() (a [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		a[r] = classesOf(r)
	}
	return a
}()

// classesOf computes the classes of r from the unicode tables.
func classesOf(r rune) uint8 {
	var c uint8
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	if unicode.Is(unicode.L, r) {
		c |= cL
	}
	if unicode.Is(unicode.N, r) {
		c |= cN
	}
	if unicode.IsSpace(r) {
		c |= cS
	}
	if r == '\r' || r == '\n' {
		c |= cNL
	}
	return c
}

func buildClasses() *classTable { return buildClassTable(nil) }

// buildClassTable builds the table of the unicode package's classes, changed by adjust (when not
// nil) before it is packed.
func buildClassTable(adjust func(flat []uint8)) *classTable {
	flat := make([]uint8, unicode.MaxRune+1)
	set := func(tab *unicode.RangeTable, bit uint8) {
		for _, r := range tab.R16 {
			for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
				flat[c] |= bit
			}
		}
		for _, r := range tab.R32 {
			for c := r.Lo; c <= r.Hi; c += r.Stride {
				flat[c] |= bit
			}
		}
	}
	set(unicode.Lu, cUpper|cL)
	set(unicode.Lt, cUpper|cL)
	set(unicode.Lm, cUpper|cLower|cL)
	set(unicode.Lo, cUpper|cLower|cL)
	set(unicode.Ll, cLower|cL)
	set(unicode.M, cUpper|cLower)
	set(unicode.N, cN)
	// unicode.IsSpace is the Latin-1 list below plus the White_Space property elsewhere.
	for _, r := range "\t\n\v\f\r \u0085\u00a0" {
		flat[r] |= cS
	}
	for _, r := range unicode.White_Space.R16 {
		for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
			if c > unicode.MaxLatin1 {
				flat[c] |= cS
			}
		}
	}
	for _, r := range unicode.White_Space.R32 {
		for c := r.Lo; c <= r.Hi; c += r.Stride {
			if c > unicode.MaxLatin1 {
				flat[c] |= cS
			}
		}
	}
	flat['\r'] |= cNL
	flat['\n'] |= cNL
	if adjust != nil {
		adjust(flat)
	}

	t := &classTable{}
	seen := map[[256]uint8]uint16{}
	for b := range t.blockIndex {
		block := [256]uint8(flat[b<<8 : (b+1)<<8])
		i, ok := seen[block]
		if !ok {
			i = uint16(len(seen))
			seen[block] = i
			t.blocks = append(t.blocks, block[:]...)
		}
		t.blockIndex[b] = i
	}
	return t
}

// of returns the classes of r.
func (t *classTable) of(r rune) uint8 {
	return t.blocks[int(t.blockIndex[r>>8])<<8|int(r&0xff)]
}

// at returns the classes and the width of the rune at s[i:], which must be valid UTF-8.
func (t *classTable) at(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClasses[b], 1
	}
	return t.atSlow(s, i)
}

func (t *classTable) atSlow(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return t.of(r), w
}
