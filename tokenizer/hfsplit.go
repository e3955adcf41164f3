package tokenizer

// The split patterns of tokenizer.json files that have a hand-written scanner here (o200k_base's
// is split.go's, with contractionFold). The
// reference (the tokenizers library) runs them with Oniguruma, a backtracking engine, so the
// scanners follow the same rules as those of split.go: at each position the alternatives are
// tried in order, and the first that matches wins with the match its greedy quantifiers reach
// first. Two things differ from tiktoken-go's regexp2: Oniguruma's case-insensitive match of
// (?i:'s) also takes "'ſ" (U+017F LATIN SMALL LETTER LONG S folds to s; no other character
// folds to a letter of the contractions), and ByteLevel's own pattern is case-sensitive.
const (
	// llama3Pattern is Llama 3's Split pattern, cl100k_base's.
	llama3Pattern = CL100kPattern
	// qwenPattern is Qwen 3's: cl100k_base's with one digit a piece.
	qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// o200kPattern is o200k_base's, as tiktoken writes it.
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is the pattern of the ByteLevel pre-tokenizer when use_regex is set (GPT-2's,
	// also p50k_base's and r50k_base's).
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// knownPatterns maps the Split patterns with a scanner to it.
var knownPatterns = map[string]func(t *classTable, s string, p int) int{
	llama3Pattern: func(t *classTable, s string, p int) int { return t.cl100k(s, p, true, 3) },
	qwenPattern:   func(t *classTable, s string, p int) int { return t.cl100k(s, p, true, 1) },
	o200kPattern:  func(t *classTable, s string, p int) int { return t.o200k(s, p, true) },
}

// contractionFold matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at e as Oniguruma does, and returns its
// end: e if there is none. Besides the ASCII letters in either
// case, "ſ" (U+017F, whose case folding is s) matches s.
func contractionFold(s string, e int) int {
	if end := contraction(s, e); end > e {
		return end
	}
	if e+2 < len(s) && s[e] == '\'' && s[e+1] == 0xc5 && s[e+2] == 0xbf {
		return e + 3
	}
	return e
}

// splitGPT2 returns the end of the piece starting at p of ByteLevel's pattern,
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (case-sensitive).
func (t *classTable) splitGPT2(s string, p int) int {
	if s[p] == '\'' {
		if e := contractionLower(s, p); e > p {
			return e
		}
	}
	q := p // where the class run starts: after an optional space
	if s[p] == ' ' && p+1 < len(s) {
		q = p + 1
	}
	c, w := t.at(s, q)
	switch {
	case c&cL != 0:
		return t.scan(s, q+w, cL)
	case c&cN != 0:
		return t.scan(s, q+w, cN)
	case c&notPunct == 0:
		return t.scanNot(s, q+w, notPunct)
	}
	// White space: \s+(?!\S)|\s+.
	i, last := p, p
	for i < len(s) {
		c, w := t.at(s, i)
		if c&cS == 0 {
			break
		}
		last = i
		i += w
	}
	if i == len(s) || last == p {
		return i
	}
	return last
}

// scanNot returns the end of the run of runes starting at i whose classes have none of mask.
func (t *classTable) scanNot(s string, i int, mask uint8) int {
	for i < len(s) {
		c, w := t.at(s, i)
		if c&mask != 0 {
			return i
		}
		i += w
	}
	return i
}

// contractionLower matches 's|'t|'re|'ve|'m|'ll|'d at e (lower case only) and returns the end:
// e if there is none.
func contractionLower(s string, e int) int {
	if e+1 >= len(s) {
		return e
	}
	switch s[e+1] {
	case 's', 't', 'm', 'd':
		return e + 2
	case 'r', 'v':
		if e+2 < len(s) && s[e+2] == 'e' {
			return e + 3
		}
	case 'l':
		if e+2 < len(s) && s[e+2] == 'l' {
			return e + 3
		}
	}
	return e
}
