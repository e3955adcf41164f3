package redact

import (
	"html"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// normalized is a text with its evasions undone, and where each of its bytes came from.
type normalized struct {
	text string
	segs []seg // ascending, covering text
}

// seg says that text[n:n+nl] came from the original's [o, o+ol): copied as it was when
// verbatim, else decoded (a character, an escape, an entity, with the invisible characters
// dropped before it).
type seg struct {
	n, nl, o, ol int
	verbatim     bool
}

// back maps spans of the normalised text to spans of the original.
func (n *normalized) back(ss []secret) []secret {
	at := func(i int) seg {
		k, _ := slices.BinarySearchFunc(n.segs, i, func(g seg, i int) int {
			if g.n+g.nl <= i {
				return -1
			}
			if g.n > i {
				return 1
			}
			return 0
		})
		return n.segs[k]
	}
	for i, s := range ss {
		g := at(s.s)
		ss[i].s = g.o
		if g.verbatim {
			ss[i].s += s.s - g.n
		}
		g = at(s.e - 1)
		ss[i].e = g.o + g.ol
		if g.verbatim {
			ss[i].e = g.o + s.e - g.n
		}
	}
	return ss
}

// normalize undoes the evasions that would hide a secret from the patterns:
//
//   - string escapes: \uXXXX (surrogate pairs too), \UXXXXXXXX, \xXX and \/ (JSON, Go,
//     Python, JavaScript, C); an escaped quote or backslash stays escaped (\u0022 becomes
//     \"), and \n, \t, \" and the like stay as they are, so that the quoting of a value,
//     which the patterns read, is kept;
//   - HTML character references: &#112;, &#x70;, &quot;, &equals; and the other named ones;
//   - percent-encoded bytes: %70, %2B;
//   - invisible characters, dropped: zero-width spaces and joiners, the word joiner, the soft
//     hyphen, the byte order mark, bidirectional controls, variation selectors, tag
//     characters, the Mongolian vowel separator;
//   - full-width forms (ｐａｓｓｗｏｒｄ, ：), and the Unicode spaces (no-break, narrow no-break,
//     ideographic, en to hair, medium mathematical, Ogham), folded to ASCII;
//   - Cyrillic and Greek letters that look like Latin ones (раssword with a Cyrillic р),
//     folded to the Latin letter.
//
// It reports false, and does no work, when text holds none of them: ordinary text (JSON with
// its \n and \" included) is read once.
func normalize(text string) (normalized, bool) { return normalizeIf(text, evasive(text)) }

// normalizeIf is normalize of a text already known to hold an evasion (evade) or not.
func normalizeIf(text string, evade bool) (normalized, bool) {
	if !evade {
		return normalized{}, false
	}
	var n normalized
	buf := make([]byte, 0, len(text))
	var rb [utf8.UTFMax]byte
	run := 0      // start of the verbatim run not yet added
	pending := -1 // start of the invisible characters dropped just before, -1 when none
	flush := func(i int) {
		if i > run {
			n.segs = append(n.segs, seg{n: len(buf), nl: i - run, o: run, ol: i - run, verbatim: true})
			buf = append(buf, text[run:i]...)
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c != '\\' && c != '&' && c != '%' && c < utf8.RuneSelf && pending < 0 {
			i++
			continue
		}
		r, size := decodeAt(text, i)
		if size == 1 && r < utf8.RuneSelf && pending < 0 {
			i++ // a backslash, ampersand or percent sign that starts nothing
			continue
		}
		if r == utf8.RuneError && size == 1 && pending < 0 {
			i++ // an invalid byte stays as it is
			continue
		}
		flush(i)
		from := i
		if pending >= 0 {
			from = pending
		}
		if invisible(r) {
			if pending < 0 {
				pending = i
			}
			i += size
			run = i
			continue
		}
		if f, ok := fold(r); ok {
			r = f
		}
		k := 1
		if (r == '"' || r == '\'' || r == '\\') && c == '\\' && size > 1 {
			rb[0], rb[1], k = '\\', byte(r), 2 // \u0022 stays an escaped quote: the quoting is kept
		} else if r < utf8.RuneSelf {
			rb[0] = byte(r)
		} else if r == utf8.RuneError && size == 1 {
			rb[0] = c
		} else {
			k = utf8.EncodeRune(rb[:], r)
		}
		n.segs = append(n.segs, seg{n: len(buf), nl: k, o: from, ol: i + size - from})
		buf = append(buf, rb[:k]...)
		pending = -1
		i += size
		run = i
	}
	flush(len(text))
	n.text = string(buf)
	return n, n.text != text
}

// evasive reports whether text holds an evasion normalize undoes: an escape \u, \U or \x,
// a character reference, a percent-encoded byte, or a non-ASCII character that normalize
// drops or folds.
func evasive(text string) bool {
	for i := 0; i < len(text); i++ {
		if !mayEvade[text[i]] {
			continue
		}
		switch c := text[i]; {
		case c == '\\':
			if i+1 < len(text) && (text[i+1] == 'u' || text[i+1] == 'x' || text[i+1] == 'U') {
				if _, _, ok := unescape(text[i:]); ok {
					return true
				}
			}
		case c == '&':
			if _, _, ok := entity(text[i:]); ok {
				return true
			}
		case c == '%':
			if i+2 < len(text) && isHex(text[i+1]) && isHex(text[i+2]) {
				return true
			}
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(text[i:])
			if _, ok := fold(r); ok || invisible(r) {
				return true
			}
			i += size - 1
		}
	}
	return false
}

// evasiveAt is evasive(text), given the places where an evasion may start that a scanner
// with withEvasions found in text: only they are read.
func evasiveAt(text string, at []int) bool {
	if len(text) < 2 {
		return evasive(text)
	}
	if text[0] >= utf8.RuneSelf && evasiveRun(text[0:]) {
		return true
	}
	for _, i := range at {
		if text[i+1] >= utf8.RuneSelf {
			if evasiveRun(text[i+1:]) {
				return true
			}
			continue
		}
		switch text[i] {
		case '\\':
			if _, _, ok := unescape(text[i:]); ok {
				return true
			}
		case '&':
			if _, _, ok := entity(text[i:]); ok {
				return true
			}
		case '%':
			if i+2 < len(text) && isHex(text[i+2]) {
				return true
			}
		}
	}
	return false
}

// evasiveRun reports whether the run of non-ASCII bytes that starts text holds a
// character that normalize drops or folds.
func evasiveRun(text string) bool {
	for i := 0; i < len(text) && text[i] >= utf8.RuneSelf; {
		r, size := utf8.DecodeRuneInString(text[i:])
		if _, ok := fold(r); ok || invisible(r) {
			return true
		}
		i += size
	}
	return false
}

// mayEvade marks the bytes that may start an evasion.
var mayEvade = func() (t [256]bool) {
	t['\\'], t['&'], t['%'] = true, true, true
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = true
	}
	return t
}()

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// decodeAt returns the character at text[i] and the bytes it spans: an escape, an HTML
// character reference or a percent-encoded byte is decoded; anything else is one UTF-8
// character (utf8.RuneError, 1 for an invalid byte).
func decodeAt(text string, i int) (rune, int) {
	switch text[i] {
	case '\\':
		if r, size, ok := unescape(text[i:]); ok {
			return r, size
		}
	case '&':
		if r, size, ok := entity(text[i:]); ok {
			return r, size
		}
	case '%':
		if i+2 < len(text) {
			if v, err := strconv.ParseUint(text[i+1:i+3], 16, 8); err == nil {
				return rune(v), 3
			}
		}
	}
	if text[i] < utf8.RuneSelf {
		return rune(text[i]), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

// unescape decodes the escape sequence at the start of s.
func unescape(s string) (rune, int, bool) {
	if len(s) < 2 {
		return 0, 0, false
	}
	switch s[1] {
	case '/':
		return '/', 2, true
	case 'x':
		return hexRune(s, 2, 2)
	case 'U':
		return hexRune(s, 2, 8)
	case 'u':
		r, size, ok := hexRune(s, 2, 4)
		if ok && r >= 0xD800 && r < 0xDC00 && len(s) >= size+6 && s[size] == '\\' && s[size+1] == 'u' {
			if lo, n, ok := hexRune(s[size:], 2, 4); ok && lo >= 0xDC00 && lo < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), size + n, true
			}
		}
		return r, size, ok
	}
	return 0, 0, false
}

// hexRune reads n hex digits of s from offset at.
func hexRune(s string, at, n int) (rune, int, bool) {
	if len(s) < at+n {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(s[at:at+n], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, 0, false
	}
	return rune(v), at + n, true
}

// entity decodes the HTML character reference at the start of s (&#112; &#x70; &quot;).
func entity(s string) (rune, int, bool) {
	end := -1
	for j := 1; j < len(s) && j < 33; j++ {
		c := s[j]
		if c == ';' {
			end = j
			break
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '#') {
			return 0, 0, false
		}
	}
	if end < 2 {
		return 0, 0, false
	}
	dec := html.UnescapeString(s[:end+1])
	r, size := utf8.DecodeRuneInString(dec)
	if dec == s[:end+1] || size != len(dec) {
		return 0, 0, false // not a reference, or one of two characters
	}
	return r, end + 1, true
}

// invisible reports characters that render as nothing: dropped before matching.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x180E, r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064,
		r >= 0x2066 && r <= 0x206F, r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// fold returns the ASCII character a full-width form, a mathematical letter or digit, or a
// look-alike letter stands for.
func fold(r rune) (rune, bool) {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		return r - 0xFF01 + '!', true
	case r == 0x3000, r == 0x00A0, r == 0x1680, r >= 0x2000 && r <= 0x200A, r == 0x202F, r == 0x205F:
		return ' ', true // the ideographic, no-break, Ogham, typographic and math spaces
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical bold, italic, script, ... letters
		if off := (r - 0x1D400) % 52; off < 26 {
			return 'A' + off, true
		} else {
			return 'a' + off - 26, true
		}
	case r >= 0x1D7CE && r <= 0x1D7FF: // mathematical digits
		return '0' + (r-0x1D7CE)%10, true
	}
	if f, ok := confusables[r]; ok {
		return f, true
	}
	return 0, false
}

// confusables are the Cyrillic and Greek letters drawn like a Latin one (after Unicode's
// confusables.txt), and a few punctuation marks drawn like ASCII ones.
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'к': 'k',
	'ӏ': 'l', 'м': 'm', 'п': 'n', 'о': 'o', 'р': 'p', 'ԛ': 'q', 'г': 'r', 'ѕ': 's', 'т': 't',
	'ц': 'u', 'ѵ': 'v', 'ԝ': 'w', 'х': 'x', 'у': 'y', 'ᴢ': 'z',
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M',
	'О': 'O', 'Р': 'P', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'Ү': 'Y', 'Ԝ': 'W', 'Ԛ': 'Q',
	// Greek
	'α': 'a', 'ο': 'o', 'ρ': 'p', 'ν': 'v', 'ι': 'i', 'κ': 'k', 'υ': 'u', 'τ': 't', 'ε': 'e',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N',
	'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Latin look-alikes and punctuation
	'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', '‐': '-', '‑': '-', '‒': '-', '–': '-', '⁄': '/',
	'∕': '/', '꞉': ':', '∶': ':', 'ː': ':', '˸': ':',
}

// unquotedText is a text with one level of string escapes undone (unquoted): esc holds, in
// ascending order, the places of text where an escape of two bytes became one.
type unquotedText struct {
	text string
	esc  []int
}

// back maps spans of the unquoted text to spans of the original.
func (u *unquotedText) back(ss []secret) []secret {
	before := func(i int) int { // escapes before place i of text
		k, _ := slices.BinarySearch(u.esc, i)
		return k
	}
	for i, s := range ss {
		e := s.e - 1
		k := before(e)
		end := e + k + 1
		if k < len(u.esc) && u.esc[k] == e {
			end++ // the last byte was an escape of two
		}
		ss[i].s, ss[i].e = s.s+before(s.s), end
	}
	return ss
}

// unquoted undoes one level of string escapes: \" and \' become quotes, \\ a backslash,
// \n, \r and \t the control they name, \/ a slash. normalize keeps them, so that the quoting
// of a value is read as written; a text quoted once more (a command line or a config file in
// a JSON string: a tool call's arguments) is read through this copy too, where its values
// have the quotes and line breaks the rules expect (<add key=\"Password\" value=\"...\"/>,
// curl -u \"user:pass\"). It reports false, and does no work, when text has no escaped quote
// or backslash.
func unquoted(text string) (unquotedText, bool) {
	i := strings.IndexByte(text, '\\')
	if i < 0 || !strings.Contains(text[i:], `\"`) && !strings.Contains(text[i:], `\\`) && !strings.Contains(text[i:], `\'`) {
		return unquotedText{}, false
	}
	var u unquotedText
	buf := make([]byte, 0, len(text))
	run := 0
	for i < len(text)-1 {
		c := text[i+1]
		switch c {
		case '"', '\'', '\\', '/':
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			c = 0
		}
		if c != 0 {
			buf = append(buf, text[run:i]...)
			u.esc = append(u.esc, len(buf))
			buf = append(buf, c)
			run = i + 2
			i++
		}
		j := strings.IndexByte(text[i+1:], '\\')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	buf = append(buf, text[run:]...)
	u.text = string(buf)
	return u, len(u.esc) > 0
}
