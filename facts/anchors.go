package facts

import (
	"regexp"
	"slices"
	"strings"
)

// A finder runs a span pattern only where a match can start. Go's regexp engine is slow on
// patterns without a literal prefix, which all the span patterns are; so each finder lists
// candidate starts from a cheap scan for a byte or word its matches contain (the '-' of a
// date, the '@' of an email, the ':' of a clock time), and tries its pattern, anchored with
// ^, at those starts only. A pattern that began with \b relies on its candidates to start
// after a non-word byte.
type finder struct {
	re     *regexp.Regexp
	window int // bytes a match may span from its start
	starts func(w string) []int
	// fast, when set, matches the commonest shape of the pattern by hand at start st of
	// w[:lim]: the submatch indexes the pattern would give, and true; false when the text is of
	// another shape (the pattern then runs).
	fast func(w string, st, lim int) ([4]int, bool)
}

func newFinder(re *regexp.Regexp, window int, starts func(w string) []int) finder {
	src := strings.TrimPrefix(re.String(), `\b`)
	return finder{re: regexp.MustCompile(`^(?:` + src + `)`), window: window, starts: starts}
}

// find returns the non-overlapping matches in w (submatch index slices), in order.
func (f finder) find(w string) [][]int {
	starts := f.starts(w)
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	var out [][]int
	var fast []int // the matches of fast, in one block
	end := 0
	for _, st := range starts {
		if st < end || st < 0 || st >= len(w) {
			continue
		}
		lim := min(len(w), st+f.window)
		if f.fast != nil {
			if m, ok := f.fast(w, st, lim); ok {
				if cap(fast)-len(fast) < len(m) {
					fast = make([]int, 0, len(m)*len(starts))
				}
				fast = append(fast, m[:]...)
				out = append(out, fast[len(fast)-len(m):len(fast):len(fast)])
				end = m[1]
				continue
			}
		}
		m := f.re.FindStringSubmatchIndex(w[st:lim])
		if m == nil {
			continue
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += st
			}
		}
		out = append(out, m)
		end = m[1]
	}
	return out
}

// indexAll returns the offsets of every occurrence of sub in s.
func indexAll(s, sub string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + 1
		if i >= len(s) {
			return out
		}
	}
}

// keywordSet finds every occurrence of any of a set of keywords in one pass over a text,
// each byte compared only with the keywords that start with it: what indexAll of each
// keyword in turn finds, at a fraction of the passes.
type keywordSet struct {
	first [256][]string
	fold  bool // ASCII letters match in any case (the keywords are lower case)
}

func newKeywordSet(kws ...string) *keywordSet {
	k := &keywordSet{}
	for _, kw := range kws {
		k.first[kw[0]] = append(k.first[kw[0]], kw)
	}
	return k
}

// newFoldKeywordSet is newKeywordSet for lower-case keywords found in any case of ASCII
// letters: a text is read as it is, not lower-cased first.
func newFoldKeywordSet(kws ...string) *keywordSet {
	k := newKeywordSet(kws...)
	k.fold = true
	for c := 'a'; c <= 'z'; c++ {
		k.first[c-'a'+'A'] = k.first[c]
	}
	return k
}

// hasPrefix reports whether s starts with keyword kw, as the set compares.
func (k *keywordSet) hasPrefix(s, kw string) bool {
	if k.fold {
		return hasPrefixFold(s, kw)
	}
	return strings.HasPrefix(s, kw)
}

// hasPrefixFold reports whether s starts with the lower-case prefix, ASCII letters compared in
// any case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerByte(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// each calls f for every occurrence of a keyword in s, at p, in order of p (keywords at the
// same p in the order given).
func (k *keywordSet) each(s string, f func(p int, kw string)) {
	k.scan(s, false, func(p int, kw string) bool { f(p, kw); return true })
}

// eachWord is each for the occurrences at a word start (see wordStart) only: the bytes inside
// a word are not compared with the keywords.
func (k *keywordSet) eachWord(s string, f func(p int, kw string)) {
	k.scan(s, true, func(p int, kw string) bool { f(p, kw); return true })
}

// anyWord reports whether a keyword occurs in s at a word start.
func (k *keywordSet) anyWord(s string) bool {
	found := false
	k.scan(s, true, func(int, string) bool { found = true; return false })
	return found
}

// scan calls f for the occurrences of a keyword in s, in order, at word starts only when
// words is set, until f returns false.
func (k *keywordSet) scan(s string, words bool, f func(p int, kw string) (more bool)) {
	for p := 0; p < len(s); p++ {
		if words && p > 0 && isWordByte(s[p-1]) {
			continue
		}
		for _, kw := range k.first[s[p]] {
			if k.hasPrefix(s[p:], kw) && !f(p, kw) {
				return
			}
		}
	}
}

// back moves from i to the left over bytes accepted by ok, at most max bytes.
func back(w string, i int, max int, ok func(byte) bool) int {
	for n := 0; i > 0 && n < max && ok(w[i-1]); n++ {
		i--
	}
	return i
}

// wordStart reports whether a match may begin at i under a leading \b: the byte before is
// not a word byte (or i is the start).
func wordStart(w string, i int) bool { return i == 0 || !isWordByte(w[i-1]) }

func isHexByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// digitsBack returns the start of the run of up to max digits ending before i.
func digitsBack(w string, i, max int) int { return back(w, i, max, isDigit) }

var (
	urlFinder = newFinder(urlRE, 4096, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "://") {
			if st := back(w, p, 8, isAlnum); st < p && wordStart(w, st) {
				out = append(out, st)
			}
		}
		return out
	})
	emailFinder = newFinder(emailRE, 512, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "@") {
			st := back(w, p, 256, func(b byte) bool { return isAlnum(b) || strings.IndexByte("._%+-", b) >= 0 })
			for st < p && !isAlnum(w[st]) {
				st++
			}
			if st < p && wordStart(w, st) {
				out = append(out, st)
			}
		}
		return out
	})
	winFinder = newFinder(winRE, 1024, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, `:\`) {
			if p > 0 && isLetter(w[p-1]) && wordStart(w, p-1) {
				out = append(out, p-1)
			}
		}
		return out
	})
	pathFinder = newFinder(pathRE, 1024, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "/") {
			out = append(out, back(w, p, 1024, func(b byte) bool { return isAlnum(b) || strings.IndexByte("_.@+~-", b) >= 0 }))
		}
		return out
	})
	uuidFinder = newFinder(uuidRE, 40, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "-") {
			if st := back(w, p, 8, isHexByte); p-st == 8 && wordStart(w, st) {
				out = append(out, st)
			}
		}
		return out
	})
	isoDateFinder = newFinder(isoDateRE, 40, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "-") {
			if st := digitsBack(w, p, 4); p-st == 4 && wordStart(w, st) {
				out = append(out, st)
			}
		}
		return out
	})
	monthDayFinder = newFinder(monthDayRE, 40, monthStarts)
	dayMonthFinder = newFinder(dayMonthRE, 40, func(w string) []int {
		var out []int
		for _, p := range monthStarts(w) {
			i := back(w, p, 8, func(b byte) bool { return b == ' ' || b == '\t' })
			if i == p {
				continue
			}
			if i >= 2 && isLetter(w[i-1]) && isLetter(w[i-2]) {
				i -= 2 // 17th
			}
			if st := digitsBack(w, i, 2); st < i && wordStart(w, st) {
				out = append(out, st)
			}
		}
		return out
	})
	slashDateFinders = func() []finder {
		starts := func(w string) []int {
			var out []int
			for _, sep := range []string{"/", "."} { // found by a fast search: most texts have neither
				for _, i := range indexAll(w, sep) {
					if i >= 1 && i+1 < len(w) && isDigit(w[i-1]) && isDigit(w[i+1]) {
						if st := digitsBack(w, i, 4); wordStart(w, st) {
							out = append(out, st)
						}
					}
				}
			}
			return out // find sorts them
		}
		return []finder{newFinder(slashYMDRE, 16, starts), newFinder(slashDMYRE, 16, starts)}
	}()
	amountFinder = newFinder(amountRE, 64, func(w string) []int {
		var out []int
		amountKeywords.each(w, func(p int, kw string) {
			if kw[0] == '$' || kw[0] >= 0x80 { // a symbol
				if kw == "$" && p >= 2 && w[p-2:p] == "US" {
					p -= 2
				}
				out = append(out, p)
				return
			}
			if wordStart(w, p) {
				out = append(out, p) // EUR 30
			}
			i := p
			if i > 0 && (w[i-1] == ' ' || w[i-1] == '\t') {
				i--
			}
			if st := back(w, i, 32, func(b byte) bool { return isDigit(b) || b == ',' || b == '.' }); st < i && isDigit(w[st]) && wordStart(w, st) {
				out = append(out, st) // 30 EUR
			}
		})
		return out
	})
	percentFinder = newFinder(percentRE, 32, func(w string) []int {
		var out []int
		add := func(p int) {
			i := p
			if i > 0 && (w[i-1] == ' ' || w[i-1] == '\t') {
				i--
			}
			if st := back(w, i, 24, func(b byte) bool { return isDigit(b) || b == '.' }); st < i && isDigit(w[st]) && wordStart(w, st) {
				out = append(out, st)
			}
		}
		for _, p := range indexAll(w, "%") {
			add(p)
		}
		for _, p := range indexAll(w, "percent") {
			add(p)
		}
		return out
	})
	clockFinder = newFinder(clockRE, 24, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, ":") {
			if p > 0 && p+1 < len(w) && isDigit(w[p-1]) && isDigit(w[p+1]) {
				if st := digitsBack(w, p, 2); wordStart(w, st) {
					out = append(out, st)
				}
			}
		}
		clockSuffixes.each(w, func(p int, _ string) {
			i := p
			if i > 0 && (w[i-1] == ' ' || w[i-1] == '\t') {
				i--
			}
			if st := digitsBack(w, i, 2); st < i && wordStart(w, st) {
				out = append(out, st)
			}
		})
		return out
	})
	issueFinder  = newFinder(issueRE, 16, func(w string) []int { return indexAll(w, "#") })
	shaCtxFinder = newFinder(shaCtxRE, 96, func(w string) []int {
		var out []int
		shaKeywords.eachWord(w, func(p int, _ string) { out = append(out, p) })
		return out
	})
	hyphenIDFinder = newFinder(hyphenIDRE, 64, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "-") {
			if p+1 < len(w) && isDigit(w[p+1]) && p > 0 && (w[p-1] >= 'A' && w[p-1] <= 'Z' || isDigit(w[p-1])) {
				st := back(w, p, 48, func(b byte) bool { return b >= 'A' && b <= 'Z' || isDigit(b) || b == '-' })
				for st < p && !(w[st] >= 'A' && w[st] <= 'Z') {
					st++
				}
				if st < p && wordStart(w, st) {
					out = append(out, st)
				}
			}
		}
		return out
	})
	snakeIDFinder = newFinder(snakeIDRE, 128, func(w string) []int {
		var out []int
		for _, p := range indexAll(w, "_") {
			if p+1 < len(w) && isDigit(w[p+1]) {
				st := back(w, p, 96, func(b byte) bool { return b >= 'a' && b <= 'z' || isDigit(b) || b == '_' })
				for st < p && !(w[st] >= 'a' && w[st] <= 'z') {
					st++
				}
				if st < p && wordStart(w, st) {
					out = append(out, st)
				}
			}
		}
		return out
	})
	ctxIDFinder = func() finder {
		f := newFinder(ctxIDRE, 96, func(w string) []int {
			var out []int
			ctxIDKeywordSet.eachWord(w, func(p int, kw string) {
				if e := p + len(kw); e == len(w) || !isWordByte(w[e]) {
					out = append(out, p)
				}
			})
			return out
		})
		f.fast = ctxIDFast
		return f
	}()
)

// ctxIDKeywords are the words of ctxIDRE that an id follows.
var ctxIDKeywords = []string{"order", "reservation", "booking", "confirmation", "ticket", "invoice", "account",
	"transaction", "tracking", "reference", "customer", "user", "issue", "incident", "pr", "pull request"}

// The keywords the finders look for, each set found in one pass.
var (
	ctxIDKeywordSet = newFoldKeywordSet(ctxIDKeywords...)
	shaKeywords     = newFoldKeywordSet("commit", "sha", "revision", "rev", "hash", "checkout", "cherry-pick", "head is now at")
	clockSuffixes   = newFoldKeywordSet("am", "pm", "a.m.", "p.m.")
	amountKeywords  = newKeywordSet("$", "€", "£", "¥", "₹", // symbols, then codes
		"USD", "EUR", "GBP", "CAD", "AUD", "JPY", "CHF", "CNY", "INR", "dollar", "euro")
	monthKeywords = newKeywordSet(monthPrefixes...)
)

// ctxIDFast matches ctxIDRE's commonest shape, a keyword, blanks and the id ("order W000123",
// "user  mia_li" is not one: '_' follows the run): the keyword at st (no two of them start
// alike), a run of spaces and tabs, then a run of letters, digits and hyphens that starts with
// an alphanumeric and does not start with a word the pattern reads otherwise (id, number, no,
// num, code, is), followed by a byte that is neither a word byte nor cut off by the window.
// The id is the run without its trailing hyphens, as the pattern's backtracking gives it.
func ctxIDFast(w string, st, lim int) ([4]int, bool) {
	kw := ""
	for _, k := range ctxIDKeywords {
		if hasPrefixFold(w[st:], k) {
			kw = k
			break
		}
	}
	i := st + len(kw)
	if kw == "" || i >= lim || w[i] != ' ' && w[i] != '\t' {
		return [4]int{}, false
	}
	for i < lim && (w[i] == ' ' || w[i] == '\t') {
		i++
	}
	if i >= lim || !isAlnum(w[i]) {
		return [4]int{}, false
	}
	for _, p := range []string{"id", "no", "num", "code", "is"} {
		if hasPrefixFold(w[i:lim], p) {
			return [4]int{}, false
		}
	}
	j := i
	for j < lim && (isAlnum(w[j]) || w[j] == '-') {
		j++
	}
	if j == lim && lim < len(w) || j < len(w) && w[j] == '_' {
		return [4]int{}, false
	}
	e := j
	for w[e-1] == '-' {
		e--
	}
	if e-i < 2 {
		return [4]int{}, false
	}
	return [4]int{st, e, i, e}, true
}

// monthStarts finds month names (capitalised: "may" is a verb) at a word start.
func monthStarts(w string) []int {
	var out []int
	monthKeywords.eachWord(w, func(p int, _ string) { out = append(out, p) })
	return out
}

// asciiLower lower-cases ASCII letters only, so offsets stay those of s. A text without an
// upper-case ASCII letter is returned as it is; another is copied once.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		b.WriteByte(lowerByte(s[i]))
	}
	return b.String()
}

// lowerByte lower-cases an ASCII letter.
func lowerByte(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
