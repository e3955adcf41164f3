package facts

import (
	"iter"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Kept reports which facts appear in summary, as a slice parallel to ledger.
//
// Matching is case-insensitive, with whitespace runs collapsed, typographic quotes and
// dashes made plain, and thousands separators ignored ("$23,553" matches "$23553"). A
// fact must stand as its own token: "HAT02" is not found in "HAT028". On top of that:
//
//   - a tool_call fact is kept when its tool name and every one of its key argument values
//     appear on one line (values cut with "…", true, false and null need not): an action is
//     told with what it acted on, not by a name in one place and ids in a list elsewhere;
//   - a date is kept when the summary has the same day in any supported format
//     (2024-05-13, May 13, 2024, 13 May 2024, 2024/05/13, 13/05/2024);
//   - an amount is kept when the summary has the same number (1859 matches $1,859);
//   - a quantity is kept with or without the space before its unit (12 kg, 12kg).
func Kept(ledger []Fact, summary string) []bool {
	return NewChecker(ledger).Kept(summary)
}

// A Checker is Kept for one ledger and many summaries (a summary is composed, checked,
// recomposed and checked again before it commits). It indexes the ledger's facts that are
// one word (an id, a name: most facts of a long ledger) by their normal form, so that a check
// reads the summary's words once and looks each up in the index, instead of looking up each
// fact in the summary; the other facts are checked one by one as Kept describes.
type Checker struct {
	ledger []Fact
	words  map[string]int32 // the normal form of a one-word fact -> its last index in ledger
	next   []int32          // the index of the fact of the same word before it (-1: none)
	others []int32          // the indexes of the other facts
}

// NewChecker indexes ledger. The ledger must not change while the Checker is used.
func NewChecker(ledger []Fact) *Checker {
	c := &Checker{ledger: ledger, words: make(map[string]int32, len(ledger)), next: make([]int32, len(ledger))}
	for i, f := range ledger {
		c.next[i] = -1
		w, ok := oneWord(f)
		if !ok {
			c.others = append(c.others, int32(i))
			continue
		}
		if head, seen := c.words[w]; seen { // another fact of the same word (another kind)
			c.next[i] = head
		}
		c.words[w] = int32(i)
	}
	return c
}

// oneWord returns the normal form of f's text when f is kept exactly when that is one of the
// summary's maximal runs of word runes (see summaryIndex.has): a fact of a kind without a
// check of its own (not a tool call, amount, date or quantity) whose text is a word.
func oneWord(f Fact) (string, bool) {
	switch f.Kind {
	case KindToolCall, KindAmount, KindDate, KindQuantity:
		return "", false
	}
	w := normalize(strings.TrimSpace(f.Text))
	if w == "" || !allWordRunes(w) {
		return "", false
	}
	return w, true
}

// Kept is Kept(ledger, summary) for the Checker's ledger.
func (c *Checker) Kept(summary string) []bool {
	idx := newSummaryIndex(summary)
	out := make([]bool, len(c.ledger))
	if len(c.words) > 0 {
		eachWord(idx.norm, func(w string) {
			if i, ok := c.words[w]; ok {
				for ; i >= 0; i = c.next[i] {
					out[i] = true
				}
			}
		})
	}
	for _, i := range c.others {
		out[i] = idx.has(c.ledger[i])
	}
	return out
}

// summaryIndex is a summary prepared for matching.
type summaryIndex struct {
	raw     string
	norm    string
	dates   map[string]bool // canonical dates, and --MM-DD for each
	numbers map[string]bool // canonical numbers
	nospace string          // norm without the spaces between a number and a unit
	words   map[string]bool // the maximal runs of word runes of norm, built on first use
	lines   []string        // the normalised non-empty lines, built on first use
	byName  map[string][]string
	buf     []byte // scratch of containsText
	// places: where each word of norm stands, built on first use (see tokenIn)
	places    map[string]wordPlaces
	placeAt   []int // the offset in norm of each place
	placeNext []int // the place of the same word before it, -1 for none
}

func newSummaryIndex(summary string) *summaryIndex {
	summary = strings.ToValidUTF8(summary, "\uFFFD")
	return &summaryIndex{raw: summary, norm: normalize(summary)}
}

func (s *summaryIndex) has(f Fact) bool {
	text := strings.TrimSpace(f.Text)
	if text == "" {
		return false
	}
	switch f.Kind {
	case KindToolCall:
		return s.hasToolCall(text)
	case KindAmount:
		// By number only: the 22 of 2024-05-22 is not the amount 22.
		if n := numberCore(text); n != "" {
			return s.numberSet()[n]
		}
	}
	if s.containsText(text) {
		return true
	}
	switch f.Kind {
	case KindDate:
		key := dateKey(text)
		if key == "" || strings.HasPrefix(key, "ambiguous:") {
			return false
		}
		return s.dateSet()[key]
	case KindQuantity:
		if s.nospace == "" {
			s.nospace = unitSpaceRE.ReplaceAllString(s.norm, "$1$2")
		}
		return containsToken(s.nospace, unitSpaceRE.ReplaceAllString(normalize(text), "$1$2"))
	}
	return false
}

var unitSpaceRE = regexp.MustCompile(`(\d)[ -]([^\d\s])`)

// hasToolCall checks the name and the key argument values of "name(k=v, k=v)", on one line.
func (s *summaryIndex) hasToolCall(text string) bool {
	name, values := parseToolCallText(text)
	name = normalize(name)
	if name == "" || !s.contains(name) {
		return false
	}
	for _, v := range values {
		if !s.contains(normalize(v)) {
			return false
		}
	}
	// Every part is in the text: find a line that holds them all.
	for _, line := range s.linesWith(name) {
		ok := true
		for _, v := range values {
			if !containsToken(line, normalize(v)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// linesWith returns the normalised lines of the summary that hold name as a token, from a
// cache: a tool's name is looked for once whatever the number of its calls.
func (s *summaryIndex) linesWith(name string) []string {
	if got, ok := s.byName[name]; ok {
		return got
	}
	if s.lines == nil {
		for l := range strings.SplitSeq(s.raw, "\n") {
			if l = normalize(l); l != "" {
				s.lines = append(s.lines, l)
			}
		}
		s.byName = map[string][]string{}
	}
	var out []string
	for _, l := range s.lines {
		if containsToken(l, name) {
			out = append(out, l)
		}
	}
	s.byName[name] = out
	return out
}

var argKeyRE = regexp.MustCompile(`(?:^|, )([A-Za-z_][A-Za-z0-9_.-]*)=`)

// parseToolCallText splits "name(k=v, k=v)" into the name and the values a summary must
// keep.
func parseToolCallText(text string) (string, []string) {
	open := strings.IndexByte(text, '(')
	if open <= 0 || !strings.HasSuffix(text, ")") {
		return strings.TrimSpace(text), nil
	}
	name := strings.TrimSpace(text[:open])
	args := text[open+1 : len(text)-1]
	locs := argKeyRE.FindAllStringSubmatchIndex(args, -1)
	var values []string
	for i, loc := range locs {
		end := len(args)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		v := strings.TrimSpace(args[loc[1]:end])
		switch {
		case v == "", strings.HasSuffix(v, ellipsis), v == "true", v == "false", v == "null":
			continue
		}
		values = append(values, v)
	}
	return name, values
}

func (s *summaryIndex) dateSet() map[string]bool {
	if s.dates != nil {
		return s.dates
	}
	s.dates = map[string]bool{}
	add := func(key string) {
		if key == "" || strings.HasPrefix(key, "ambiguous:") {
			return
		}
		s.dates[key] = true
		s.dates["--"+key[len(key)-5:]] = true
	}
	// No date pattern matches across a line break (they allow spaces and tabs, never a
	// newline, and a newline is a word boundary to \b as the start and end of a line are), so
	// each line is matched alone, and only by the patterns whose separators it holds: most
	// lines of a summary hold none, and the patterns, with no literal to look for, cost a
	// step of the matcher per byte.
	for line := range strings.SplitSeq(s.raw, "\n") {
		seps := dateSeparators(line)
		if seps&sepDash != 0 {
			for _, g := range isoDateRE.FindAllStringSubmatch(line, -1) {
				add(g[1] + "-" + g[2] + "-" + g[3])
			}
		}
		for _, p := range wordDatePatterns {
			if seps&p.need == 0 {
				continue
			}
			for _, t := range p.re.FindAllString(line, -1) {
				add(dateKey(t))
			}
		}
	}
	return s.dates
}

// wordDatePatterns are the date patterns after isoDateRE, with what a line must hold for
// each to match in it.
var wordDatePatterns = []struct {
	re   *regexp.Regexp
	need uint8
}{{dayMonthRE, sepMonth}, {monthDayRE, sepMonth}, {slashYMDRE, sepSlash}, {slashDMYRE, sepSlash | sepDot}}

// What a line holds that a date pattern needs (dateSeparators).
const (
	sepDash  uint8 = 1 << iota // a digit, '-', a digit: isoDateRE
	sepSlash                   // a digit, '/', a digit: slashYMDRE, slashDMYRE
	sepDot                     // a digit, '.', a digit: slashDMYRE
	sepMonth                   // a digit and a month's first three letters: dayMonthRE, monthDayRE
)

// dateSeparators returns the sep bits of line: a pattern whose bit is unset cannot match in
// it.
func dateSeparators(line string) uint8 {
	var seps uint8
	digit, month := false, false
	for i := 0; i < len(line); i++ {
		switch b := line[i]; {
		case isDigit(b):
			digit = true
		case (b == '-' || b == '/' || b == '.') && i > 0 && i+1 < len(line) && isDigit(line[i-1]) && isDigit(line[i+1]):
			switch b {
			case '-':
				seps |= sepDash
			case '/':
				seps |= sepSlash
			default:
				seps |= sepDot
			}
		case !month && b >= 'A' && b <= 'S' && i+3 <= len(line):
			switch line[i : i+3] {
			case "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec":
				month = true
			}
		}
	}
	if digit && month {
		seps |= sepMonth
	}
	return seps
}

// numberSet collects the standalone numbers of the summary: not parts of dates, times,
// versions, words or paths.
func (s *summaryIndex) numberSet() map[string]bool {
	if s.numbers != nil {
		return s.numbers
	}
	s.numbers = map[string]bool{}
	h := s.norm
	for st, e := range numberRuns(h) {
		if st > 0 {
			b := h[st-1]
			// A colon before the number marks a time (10:30), unless it ends a JSON key
			// ("amount":228): a tool call's raw arguments show its amounts so.
			jsonValue := b == ':' && st > 1 && h[st-2] == '"'
			if isWordByte(b) || b == '.' || b == ':' && !jsonValue || b == '/' || b == '-' && st > 1 && isWordByte(h[st-2]) {
				continue
			}
		}
		if e < len(h) {
			b := h[e]
			if b == ':' || b == '/' || b == '_' || b == '-' && e+1 < len(h) && isDigit(h[e+1]) || b == '.' && e+1 < len(h) && isDigit(h[e+1]) {
				continue
			}
			if isWordByte(b) && !unitSuffix(h[e:]) {
				continue
			}
		}
		s.numbers[canonNumber(h[st:e])] = true
	}
	return s.numbers
}

// numberRuns yields the start and end of each match of numberRunRE in h, left to right, as
// FindAllStringIndex gives them, without the matcher's step per byte: digits, and a '.' and
// digits after them.
func numberRuns(h string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(h); {
			if !isDigit(h[i]) {
				i++
				continue
			}
			st := i
			for i < len(h) && isDigit(h[i]) {
				i++
			}
			if i+1 < len(h) && h[i] == '.' && isDigit(h[i+1]) {
				for i++; i < len(h) && isDigit(h[i]); i++ {
				}
			}
			if !yield(st, i) {
				return
			}
		}
	}
}

// unitSuffix accepts 12k, 1.2m, 3bn after an amount.
func unitSuffix(rest string) bool {
	for _, u := range []string{"k", "m", "bn"} {
		if strings.HasPrefix(rest, u) && (len(rest) == len(u) || !isWordByte(rest[len(u)])) {
			return true
		}
	}
	return false
}

// normalize lower-cases s, collapses whitespace, makes typographic quotes and dashes
// plain, and drops commas between digits.
func normalize(s string) string {
	if out, ok := normalizeASCII(s); ok {
		return out
	}
	return normalizeRunes(s)
}

// normalizeRunes is normalize, rune by rune.
func normalizeRunes(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i, r := range s {
		switch r {
		case '‘', '’', '′':
			r = '\''
		case '“', '”', '″':
			r = '"'
		case '–', '—', '−':
			r = '-'
		case ',':
			if i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
				continue
			}
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// containsText is contains(normalize(text)). An ASCII text is normalised into a buffer the
// index keeps, and a word is looked up in the word set straight from it: checking thousands
// of ids ("W000123", which normalises to a new string) allocates nothing per fact.
func (s *summaryIndex) containsText(text string) bool {
	b, ok := appendNormalASCII(s.buf[:0], text)
	if !ok {
		return s.contains(normalize(text))
	}
	s.buf = b
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isWordByte(c) {
			return s.tokenIn(unsafe.String(unsafe.SliceData(b), len(b)))
		}
	}
	if s.words == nil {
		s.words = wordSet(s.norm)
	}
	return s.words[string(b)] // no allocation: the key is only looked up
}

// tokenIn is containsToken(s.norm, needle) for a normalised needle, found from the places of
// needle's words in the summary instead of by a scan of it: checking tens of thousands of
// facts ("#W0000123", a tool call) against a long text (a summary, the facts of a section)
// scanned it once for each. Where needle is a token of the text, each of needle's maximal runs
// of word runes is one of the text's, at the same distance from the match's start: it lies
// between needle's own other runes or, at needle's ends, runes that are not word runes (the
// match's boundaries). So a needle with a word the text lacks is not in it, and one with words
// is looked for only where its rarest word stands.
func (s *summaryIndex) tokenIn(needle string) bool {
	if s.places == nil {
		s.indexPlaces()
	}
	var best wordPlaces
	bestAt, found, missing := 0, false, false
	eachWord(needle, func(w string) {
		p, ok := s.places[w]
		switch {
		case !ok:
			missing = true
		case !found || p.n < best.n:
			best, bestAt, found = p, offsetIn(needle, w), true
		}
	})
	switch {
	case missing:
		return false
	case !found: // no word: the text is scanned
		return containsToken(s.norm, needle)
	}
	for e := best.last; e >= 0; e = s.placeNext[e] {
		if i := s.placeAt[e] - bestAt; i >= 0 && i+len(needle) <= len(s.norm) && s.norm[i:i+len(needle)] == needle && tokenAt(s.norm, needle, i) {
			return true
		}
	}
	return false
}

// wordPlaces is where a word of a text stands: the latest of its places (an index of
// summaryIndex.placeAt; the places before it follow by placeNext) and how many there are.
type wordPlaces struct{ last, n int }

// indexPlaces records the place of each maximal run of word runes of s.norm.
func (s *summaryIndex) indexPlaces() {
	s.places = map[string]wordPlaces{}
	eachWord(s.norm, func(w string) {
		p, ok := s.places[w]
		if !ok {
			p.last = -1
		}
		s.placeAt = append(s.placeAt, offsetIn(s.norm, w))
		s.placeNext = append(s.placeNext, p.last)
		p.last, p.n = len(s.placeAt)-1, p.n+1
		s.places[w] = p
	})
}

// offsetIn is the offset in s of sub, a substring of it (as eachWord passes them).
func offsetIn(s, sub string) int {
	return int(uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

// appendNormalASCII appends normalize(s) to dst for an ASCII s (false otherwise).
func appendNormalASCII(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return dst, false
		}
	}
	start, space := len(dst), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			space = true
			continue
		case ',':
			if i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
				continue
			}
		}
		if space && len(dst) > start {
			dst = append(dst, ' ')
		}
		space = false
		dst = append(dst, lowerByte(c))
	}
	return dst, true
}

// normalizeASCII is normalize for an ASCII s (false otherwise): no rune to decode, and s
// itself when it is normalised already.
func normalizeASCII(s string) (string, bool) {
	clean := true // s is its own normal form so far
	prev := byte(' ')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			return "", false
		case c >= 'A' && c <= 'Z', c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			clean = false
		case c == ' ':
			if prev == ' ' || i == len(s)-1 {
				clean = false // leading, trailing or repeated
			}
		case c == ',':
			if i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
				clean = false
			}
		}
		prev = c
	}
	if clean {
		return s, true
	}
	b, _ := appendNormalASCII(make([]byte, 0, len(s)), s)
	return string(b), true
}

// containsToken reports whether needle occurs in hay (both normalised) not glued to a
// letter or digit on a side where needle itself starts or ends with one.
// contains is containsToken(s.norm, needle). A needle made of word runes only (an id, a word)
// stands as its own token exactly when it is one of the text's maximal runs of word runes: a
// set lookup instead of a scan, which matters when thousands of facts are checked against a
// long text.
func (s *summaryIndex) contains(needle string) bool {
	if needle == "" || !allWordRunes(needle) {
		return s.tokenIn(needle)
	}
	if s.words == nil {
		s.words = wordSet(s.norm)
	}
	return s.words[needle]
}

// allWordRunes reports whether s is made of word runes only.
func allWordRunes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			return strings.IndexFunc(s[i:], func(r rune) bool { return !isWordRune(r) }) < 0
		} else if !isWordByte(c) {
			return false
		}
	}
	return true
}

// wordSet returns the maximal runs of word runes of s.
func wordSet(s string) map[string]bool {
	words := map[string]bool{}
	eachWord(s, func(w string) { words[w] = true })
	return words
}

// eachWord calls fn with each maximal run of word runes of s, in order.
func eachWord(s string, fn func(string)) {
	for i := 0; i < len(s); {
		if s[i] >= 0x80 { // the rest rune by rune
			for w := range strings.FieldsFuncSeq(s[i:], func(r rune) bool { return !isWordRune(r) }) {
				fn(w)
			}
			return
		}
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] < 0x80 && isWordByte(s[j]) {
			j++
		}
		if j < len(s) && s[j] >= 0x80 {
			// The run may go on with a non-ASCII word rune: read it, and the rest, rune by rune.
			for w := range strings.FieldsFuncSeq(s[i:], func(r rune) bool { return !isWordRune(r) }) {
				fn(w)
			}
			return
		}
		fn(s[i:j])
		i = j
	}
}

func containsToken(hay, needle string) bool {
	if needle == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(needle)
	last, _ := utf8.DecodeLastRuneInString(needle)
	for off := 0; off <= len(hay)-len(needle); {
		i := strings.Index(hay[off:], needle)
		if i < 0 {
			return false
		}
		i += off
		if tokenEnds(hay, needle, i, first, last) {
			return true
		}
		_, size := utf8.DecodeRuneInString(hay[i:])
		off = i + size
	}
	return false
}

// tokenAt reports whether the occurrence of needle at i of hay stands as a token (see
// containsToken).
func tokenAt(hay, needle string, i int) bool {
	first, _ := utf8.DecodeRuneInString(needle)
	last, _ := utf8.DecodeLastRuneInString(needle)
	return tokenEnds(hay, needle, i, first, last)
}

// tokenEnds is tokenAt for needle's first and last runes.
func tokenEnds(hay, needle string, i int, first, last rune) bool {
	if isWordRune(first) && i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(hay[:i]); isWordRune(r) {
			return false
		}
	}
	if isWordRune(last) && i+len(needle) < len(hay) {
		if r, _ := utf8.DecodeRuneInString(hay[i+len(needle):]); isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
