package tokenizer

import "unicode/utf8"

// The pre-tokenizers below are hand-written equivalents of the encodings' split patterns as the
// reference implementation (tiktoken-go) runs them with regexp2, a backtracking engine: at each
// position the alternatives are tried in order, and the first one that matches wins with the
// match its greedy quantifiers reach first. Every position of a valid UTF-8 string is matched by
// some alternative, so the pieces cover the text.
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Each function returns the end of the piece that starts at p < len(s); s must be valid UTF-8.

// splitO200k returns the end of the o200k_base piece starting at p.
func (t *classTable) splitO200k(s string, p int) int { return t.o200k(s, p, false) }

// o200k returns the end of the piece starting at p of o200k_base's pattern; fold makes the
// contractions match as Oniguruma matches them (see contractionFold), not as regexp2 does.
func (t *classTable) o200k(s string, p int, fold bool) int {
	// Fast path for ASCII words: ASCII has no marks and no Lm, Lo or Lt letters, so both word
	// alternatives come down to [A-Z]*[a-z]* (not empty), maybe after a prefix byte. It holds
	// if the word ends at the end of s or at an ASCII byte; otherwise the general path below
	// decides.
	if b := s[p]; b < utf8.RuneSelf {
		q := p
		if asciiClasses[b]&notPrefix == 0 {
			q++
		}
		i := q
		for i < len(s) && s[i]-'A' < 26 {
			i++
		}
		for i < len(s) && s[i]-'a' < 26 {
			i++
		}
		if i > q && (i == len(s) || s[i] < utf8.RuneSelf) {
			return contractionIf(fold, s, i)
		}
	}
	c0, w0 := t.at(s, p)
	switch {
	case c0&(cUpper|cLower) != 0:
		// A letter or a mark. A mark is also a possible prefix ([^\r\n\p{L}\p{N}]), so with a
		// mark each word alternative is first tried with the mark as its prefix.
		if c0&cL == 0 && p+w0 < len(s) {
			if e := t.o200kWordLowerTail(s, p+w0); e >= 0 {
				return contractionIf(fold, s, e)
			}
		}
		if e := t.o200kWordLowerTail(s, p); e >= 0 {
			return contractionIf(fold, s, e)
		}
		if c0&cL == 0 && p+w0 < len(s) {
			if e := t.o200kWordUpperHead(s, p+w0); e >= 0 {
				return contractionIf(fold, s, e)
			}
		}
		return contractionIf(fold, s, t.o200kWordUpperHead(s, p))
	case c0&notPrefix == 0 && p+w0 < len(s):
		// A possible prefix of a word.
		q := p + w0
		if e := t.o200kWordLowerTail(s, q); e >= 0 {
			return contractionIf(fold, s, e)
		}
		if e := t.o200kWordUpperHead(s, q); e >= 0 {
			return contractionIf(fold, s, e)
		}
	}
	if c0&cN != 0 {
		return t.digits(s, p, w0)
	}
	if e := t.punct(s, p, c0, w0); e >= 0 {
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}
	return t.spaces(s, p)
}

// splitCL100k returns the end of the cl100k_base piece starting at p.
func (t *classTable) splitCL100k(s string, p int) int { return t.cl100k(s, p, false, 3) }

// cl100k returns the end of the piece starting at p of cl100k_base's pattern with
// \p{N}{1,maxDigits} (maxDigits 1 or 3); fold matches the contractions as Oniguruma does (see
// contractionFold), as the tokenizer.json files that use the pattern are run.
func (t *classTable) cl100k(s string, p int, fold bool, maxDigits int) int {
	if s[p] == '\'' {
		e := contraction(s, p)
		if fold {
			e = contractionFold(s, p)
		}
		if e > p {
			return e
		}
	}
	// Fast path for ASCII words, as in splitO200k.
	if b := s[p]; b < utf8.RuneSelf {
		q := p
		if asciiClasses[b]&notPrefix == 0 {
			q++
		}
		i := q
		for i < len(s) && (s[i]|0x20)-'a' < 26 {
			i++
		}
		if i > q && (i == len(s) || s[i] < utf8.RuneSelf) {
			return i
		}
	}
	c0, w0 := t.at(s, p)
	if c0&notPrefix == 0 && p+w0 < len(s) {
		if c1, w1 := t.at(s, p+w0); c1&cL != 0 {
			return t.scan(s, p+w0+w1, cL)
		}
	}
	if c0&cL != 0 {
		return t.scan(s, p+w0, cL)
	}
	if c0&cN != 0 {
		if maxDigits == 1 {
			return p + w0
		}
		return t.digits(s, p, w0)
	}
	if e := t.punct(s, p, c0, w0); e >= 0 {
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	return t.spaces(s, p)
}

// o200kWordLowerTail matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ at q and
// returns its end, or -1. The star takes the longest run of the first class; if the rune after
// it is of the second class the plus continues from there, otherwise the star gives back runes
// until the plus can match the last given-back rune, which must be of both classes.
func (t *classTable) o200kWordLowerTail(s string, q int) int {
	i, lastLower := q, -1
	for i < len(s) {
		c, w := asciiClasses[s[i]&0x7f], 1
		if s[i] >= utf8.RuneSelf {
			c, w = t.atSlow(s, i)
		}
		if c&cUpper == 0 {
			if c&cLower == 0 {
				break
			}
			// The plus matches from here on.
			return t.scan(s, i+w, cLower)
		}
		i += w
		if c&cLower != 0 {
			lastLower = i
		}
	}
	return lastLower
}

// o200kWordUpperHead matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* at q and
// returns its end, or -1.
func (t *classTable) o200kWordUpperHead(s string, q int) int {
	i := t.scan(s, q, cUpper)
	if i == q {
		return -1
	}
	return t.scan(s, i, cLower)
}

// scan returns the end of the run of runes starting at i whose classes intersect mask.
func (t *classTable) scan(s string, i int, mask uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if asciiClasses[b]&mask == 0 {
				return i
			}
			i++
			continue
		}
		c, w := t.atSlow(s, i)
		if c&mask == 0 {
			return i
		}
		i += w
	}
	return i
}

// digits returns the end of \p{N}{1,3} at p, whose first rune is w0 bytes wide.
func (t *classTable) digits(s string, p, w0 int) int {
	i := p + w0
	for range 2 {
		if i >= len(s) {
			break
		}
		c, w := t.at(s, i)
		if c&cN == 0 {
			break
		}
		i += w
	}
	return i
}

// punct matches " ?[^\s\p{L}\p{N}]+" at p, whose rune has classes c0 and width w0, and returns
// its end, or -1.
func (t *classTable) punct(s string, p int, c0 uint8, w0 int) int {
	i := p
	if s[p] == ' ' && p+1 < len(s) {
		if c, _ := t.at(s, p+1); c&notPunct == 0 {
			i = p + 1
		}
	} else if c0&notPunct != 0 {
		return -1
	}
	// The run of runes with none of the classes in notPunct.
	for i < len(s) {
		c, w := asciiClasses[s[i]&0x7f], 1
		if s[i] >= utf8.RuneSelf {
			c, w = t.atSlow(s, i)
		}
		if c&notPunct != 0 {
			break
		}
		i += w
	}
	if i == p {
		return -1
	}
	return i
}

// spaces matches the whitespace alternatives \s*[\r\n]+|\s+(?!\S)|\s+ at p and returns the end.
// The rune at p must be whitespace.
func (t *classTable) spaces(s string, p int) int {
	i, lastNL, last := p, -1, p
	for i < len(s) {
		c, w := asciiClasses[s[i]&0x7f], 1
		if s[i] >= utf8.RuneSelf {
			c, w = t.atSlow(s, i)
		}
		if c&cS == 0 {
			break
		}
		last = i
		i += w
		if c&cNL != 0 {
			lastNL = i
		}
	}
	switch {
	case lastNL >= 0:
		// \s*[\r\n]+ : the star gives back up to the last line break.
		return lastNL
	case i == len(s) || last == p:
		// \s+(?!\S) at the end of the text, or \s+ for a single whitespace rune before a
		// non-whitespace one.
		return i
	default:
		// \s+(?!\S) gives back the last whitespace rune, so that what follows is not \S.
		return last
	}
}

// contractionIf is contractionFold if fold is set, contraction otherwise.
func contractionIf(fold bool, s string, e int) int {
	if fold {
		return contractionFold(s, e)
	}
	return contraction(s, e)
}

// contraction matches the optional (?i:'s|'t|'re|'ve|'m|'ll|'d) at e and returns the end: e if
// there is none. Case-insensitive matching compares unicode.ToLower of the text with the
// pattern; only ASCII letters lower-case to these letters (checked by a test).
func contraction(s string, e int) int {
	if e+1 >= len(s) || s[e] != '\'' {
		return e
	}
	switch s[e+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return e + 2
	case 'r', 'v':
		if e+2 < len(s) && s[e+2]|0x20 == 'e' {
			return e + 3
		}
	case 'l':
		if e+2 < len(s) && s[e+2]|0x20 == 'l' {
			return e + 3
		}
	}
	return e
}
