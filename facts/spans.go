package facts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Span patterns, in the order spans() applies them. Each stage masks what it took, so a
// reservation id inside a URL or a number inside a date is not taken again.
var (
	urlRE   = regexp.MustCompile(`\b(?:https?|ftp|file|wss?|s3|gs|ssh|git)://[^\s<>"'\x60\\{}|^]+`)
	emailRE = regexp.MustCompile(`\b[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}\b`)
	winRE   = regexp.MustCompile(`\b[A-Za-z]:\\[^\\/:*?"<>|\s]+(?:\\[^\\/:*?"<>|\s]+)*\\?`)
	pathRE  = regexp.MustCompile(`(?:~|\.{1,2})?(?:/[A-Za-z0-9_.@+-]+)+/?|[A-Za-z0-9_.@-]+(?:/[A-Za-z0-9_.@+-]+)+/?`)
	extRE   = regexp.MustCompile(`(?:^|[^.])\.[A-Za-z][A-Za-z0-9]{0,7}$|^\.[A-Za-z][A-Za-z0-9_-]*$`)
	uuidRE  = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)

	months      = `(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)`
	isoDateRE   = regexp.MustCompile(`\b((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?:T(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b`)
	monthDayRE  = regexp.MustCompile(`\b` + months + `\.?[ \t]+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?[ \t]+((?:19|20)\d\d)\b)?`)
	dayMonthRE  = regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?[ \t]+` + months + `\.?,?[ \t]+((?:19|20)\d\d)\b`)
	slashDMYRE  = regexp.MustCompile(`\b(\d{1,2})[/.](\d{1,2})[/.]((?:19|20)\d\d)\b`)
	slashYMDRE  = regexp.MustCompile(`\b((?:19|20)\d\d)/(\d{1,2})/(\d{1,2})\b`)
	amountRE    = regexp.MustCompile(`(?:[$€£¥₹]|\b(?:US\$|USD|EUR|GBP|CAD|AUD|JPY|CHF|CNY|INR)[ \t]?)[ \t]?\d+(?:,\d{3})*(?:\.\d+)?(?:[ \t]?(?:[kKM]|bn|million|billion)\b)?\b|\b\d+(?:,\d{3})*(?:\.\d+)?[ \t]?(?:USD|EUR|GBP|CAD|AUD|JPY|CHF|CNY|INR|dollars?|euros?)\b`)
	percentRE   = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:[ \t]?%|[ \t]percent\b)`)
	clockRE     = regexp.MustCompile(`\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:[ \t]?[AaPp]\.?[Mm]\b\.?)?|\b(?:1[0-2]|0?[1-9])[ \t]?(?:[AaPp]\.[Mm]\.|[AaPp][Mm]\b)`)
	issueRE     = regexp.MustCompile(`#[A-Z]?\d{2,9}\b`)
	shaCtxRE    = regexp.MustCompile(`(?i)\b(?:commit|sha1?|revision|rev|hash|checkout|cherry-pick|HEAD is now at)[\s:=#]+([0-9a-f]{7,40})\b`)
	hyphenIDRE  = regexp.MustCompile(`\b[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*-\d{2,}\b`)
	snakeIDRE   = regexp.MustCompile(`\b[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*_\d{3,}\b`)
	ctxIDRE     = regexp.MustCompile(`(?i)\b(?:order|reservation|booking|confirmation|ticket|invoice|account|transaction|tracking|reference|customer|user|issue|incident|pr|pull request)(?:[ \t]+(?:id|number|no\.?|num|code))?[ \t]*(?:[:#=]|\bis\b)?[ \t]*#?([A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])\b`)
	numberRunRE = regexp.MustCompile(`\d+(?:\.\d+)?`)
)

// masker holds a text whose taken spans are blanked out.
type masker struct {
	w     []byte
	cur   string
	dirty bool
}

// reset makes m the masker of s, reusing its buffer (an extractor's one masker, reset for
// each text: the masked strings str returns are copies, so nothing holds the buffer).
func (m *masker) reset(s string) {
	m.w, m.cur, m.dirty = append(m.w[:0], s...), s, false
}

func (m *masker) mask(s, e int) {
	for i := s; i < e; i++ {
		m.w[i] = ' '
	}
	m.dirty = true
}

// str returns the masked text; it is rebuilt once per stage, not once per mask.
func (m *masker) str() string {
	if m.dirty {
		m.cur = string(m.w)
		m.dirty = false
	}
	return m.cur
}

// prevNonSpace returns the last byte before i that is not a space, looking back at most
// four bytes, or ' '.
func (m *masker) prevNonSpace(i int) byte {
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if m.w[j] != ' ' {
			return m.w[j]
		}
	}
	return ' '
}

// at returns the byte of the masked text at i, or ' ' outside it.
func (m *masker) at(i int) byte {
	if i < 0 || i >= len(m.w) {
		return ' '
	}
	return m.w[i]
}

// spans extracts URLs, emails, paths, ids, dates, amounts, percentages, times and
// quantities from text. Each stage first checks for a byte its matches need, so most
// strings of a JSON document cost a few scans.
func (x *extractor) spans(s string, cx ctx) {
	digits := strings.ContainsAny(s, "0123456789")
	if !digits && !strings.ContainsAny(s, "/\\@") {
		return // every span but URLs, emails and paths has a digit
	}
	m := &x.mask
	m.reset(s)
	add := func(k Kind, st, e int, key string) {
		x.c.add(k, s[st:e], key, cx.ref)
		m.mask(st, e)
	}
	// The stages run in this order: each masks what it took, so that a later one does not
	// read a part of it (the digits of a URL are no amount).
	links(s, m, add)
	if !digits {
		return
	}
	digests(s, m, add)
	x.dates(s, m, cx, add)
	if cx.acted {
		versions(s, m, add) // after dates: 15.05.2024 is a date
	}
	numbers(s, m, cx, add)
	x.quantities(s, m, cx)
	x.ids(s, m, cx)
}

// spanAdder records a span s[st:e] of kind k (key: its identity when not its text) and masks it.
type spanAdder func(k Kind, st, e int, key string)

// links finds URLs, emails and paths: the spans that need no digit.
func links(s string, m *masker, add spanAdder) {
	if strings.Contains(s, "://") {
		for _, loc := range urlFinder.find(m.str()) {
			e := loc[0] + len(trimURL(s[loc[0]:loc[1]]))
			if e-loc[0] > len("https://") {
				add(KindURL, loc[0], e, "")
			}
		}
	}
	if strings.IndexByte(s, '@') >= 0 {
		for _, loc := range emailFinder.find(m.str()) {
			add(KindEmail, loc[0], loc[1], "")
		}
	}
	if strings.Contains(s, ":\\") {
		for _, loc := range winFinder.find(m.str()) {
			e := loc[0] + len(strings.TrimRight(s[loc[0]:loc[1]], ".,;:)]'\"\\"))
			if e-loc[0] > 3 {
				add(KindPath, loc[0], e, "")
			}
		}
	}
	if strings.IndexByte(m.str(), '/') >= 0 {
		for _, loc := range pathFinder.find(m.str()) {
			st, e := loc[0], loc[0]+len(strings.TrimRight(s[loc[0]:loc[1]], "."))
			if !isPath(s[st:e], m.at(st-1)) {
				continue
			}
			if diffSide(s, st) {
				m.mask(st, st+2)
				st += 2 // --- a/src/x.py: the path is src/x.py
			}
			add(KindPath, st, e, "")
		}
	}
}

// dates finds UUIDs (before the dates their dashes could read as) and dates: ISO (a
// date-time gives its date), with month names, numeric.
func (x *extractor) dates(s string, m *masker, cx ctx, add spanAdder) {
	dash := strings.IndexByte(m.str(), '-') >= 0
	if dash {
		for _, loc := range uuidFinder.find(m.str()) {
			add(KindID, loc[0], loc[1], "")
		}
		for _, g := range isoDateFinder.find(m.str()) {
			x.c.add(KindDate, s[g[0]:g[7]], dateKey(s[g[0]:g[7]]), cx.ref)
			m.mask(g[0], g[1])
		}
	}
	dateFinders := slashDateFinders
	if hasMonthName(m.str()) {
		dateFinders = append([]finder{dayMonthFinder, monthDayFinder}, dateFinders...)
	}
	for _, f := range dateFinders {
		for _, loc := range f.find(m.str()) {
			if key := dateKey(s[loc[0]:loc[1]]); key != "" {
				add(KindDate, loc[0], loc[1], key)
			}
		}
	}
}

// numbers finds amounts, percentages and, in prose, times of day.
func numbers(s string, m *masker, cx ctx, add spanAdder) {
	for _, loc := range amountFinder.find(m.str()) {
		t := s[loc[0]:loc[1]]
		if isShellArg(t) || precededByNumber(m, loc[0]) {
			continue
		}
		add(KindAmount, loc[0], loc[1], numberCore(t))
	}
	if strings.IndexByte(m.str(), '%') >= 0 || strings.Contains(m.str(), "percent") {
		for _, loc := range percentFinder.find(m.str()) {
			if precededByNumber(m, loc[0]) {
				continue
			}
			// In tool output, [ 50%] and 100%|███ are progress, not facts.
			if !cx.prose && (m.prevNonSpace(loc[0]) == '[' || m.at(loc[1]) == ']' || m.at(loc[1]) == '|') {
				m.mask(loc[0], loc[1])
				continue
			}
			add(KindPercent, loc[0], loc[1], "")
		}
	}
	if cx.prose && (strings.IndexByte(m.str(), ':') >= 0 || strings.ContainsAny(m.str(), "mM")) {
		for _, loc := range clockFinder.find(m.str()) {
			if b := m.at(loc[0] - 1); b == ':' || b == '.' || isDigit(b) {
				continue
			}
			if b := m.at(loc[1]); b == ':' || isDigit(b) {
				continue
			}
			add(KindTime, loc[0], loc[1], "")
		}
	}
}

// quantities finds numbers followed by a unit (12 kg, 3.5GB, 45-minute).
func (x *extractor) quantities(s string, m *masker, cx ctx) {
	w := m.str()
	for i := 0; i < len(w); i++ {
		if !isDigit(w[i]) || i > 0 && (isWordByte(w[i-1]) || w[i-1] == ':' || precededByNumber(m, i)) {
			continue
		}
		j := scanNumber(w, i)
		k := j
		if k < len(w) && (w[k] == ' ' || w[k] == '\t' || w[k] == '-') {
			k++
		}
		u := k
		for u < len(w) && (w[u] >= 'a' && w[u] <= 'z' || w[u] >= 'A' && w[u] <= 'Z' || w[u] >= 0x80 && !isSpaceOrASCIIPunct(w[u])) {
			u++
		}
		if u == k || u < len(w) && isWordByte(w[u]) || !isUnit(w[k:u]) {
			i = j
			continue
		}
		x.c.add(KindQuantity, s[i:u], strings.ReplaceAll(normalize(s[i:u]), " ", ""), cx.ref)
		m.mask(i, u)
		i = u // w is read forward only: what was masked behind i does not matter
	}
}

// scanNumber returns the end of the number \d+(,\d{3})*(\.\d+)? starting at i.
func scanNumber(w string, i int) int {
	j := i
	for j < len(w) && isDigit(w[j]) {
		j++
	}
	for j+3 < len(w) && w[j] == ',' && isDigit(w[j+1]) && isDigit(w[j+2]) && isDigit(w[j+3]) && (j+4 == len(w) || !isDigit(w[j+4])) {
		j += 4
	}
	if j+1 < len(w) && w[j] == '.' && isDigit(w[j+1]) {
		j++
		for j < len(w) && isDigit(w[j]) {
			j++
		}
	}
	return j
}

func isSpaceOrASCIIPunct(b byte) bool { return b < 0x80 }

// caseUnits are units whose case matters (MB, ms, m); wordUnits are compared in lower case.
var (
	caseUnits = set("KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "kB", "Mbps", "Gbps", "kbps",
		"GHz", "MHz", "kHz", "Hz", "ms", "µs", "ns", "kg", "mg", "g", "lb", "lbs", "oz", "km", "cm", "mm", "m",
		"mi", "ft", "h", "hr", "hrs", "min", "mins", "sec", "secs", "°C", "°F", "mph", "rpm", "fps", "px")
	wordUnits = set("byte", "bytes", "kilobyte", "kilobytes", "megabyte", "megabytes", "gigabyte", "gigabytes",
		"terabyte", "terabytes", "millisecond", "milliseconds", "second", "seconds", "minute", "minutes",
		"hour", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years", "night", "nights",
		"kilogram", "kilograms", "gram", "grams", "pound", "pounds", "ounce", "ounces", "kilometer", "kilometers",
		"kilometre", "kilometres", "meter", "meters", "metre", "metres", "mile", "miles", "feet", "foot", "inch", "inches",
		"bag", "bags", "suitcase", "suitcases", "passenger", "passengers", "people", "person", "persons",
		"adult", "adults", "children", "kid", "kids", "infant", "infants", "seat", "seats", "ticket", "tickets",
		"item", "items", "piece", "pieces", "unit", "units", "room", "rooms", "guest", "guests", "stop", "stops",
		"layover", "layovers", "core", "cores", "cpu", "cpus", "gpu", "gpus", "thread", "threads", "worker", "workers",
		"replica", "replicas", "node", "nodes", "request", "requests", "token", "tokens", "character", "characters",
		"chars", "word", "words", "page", "pages", "file", "files", "test", "tests", "retries", "attempt", "attempts",
		"step", "steps", "epoch", "epochs", "row", "rows", "record", "records", "user", "users", "point", "points",
		"star", "stars", "degree", "degrees")
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func isUnit(u string) bool {
	return caseUnits[u] || wordUnits[strings.ToLower(u)]
}

var monthPrefixes = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// hasMonthName reports whether a month name starts a word of s: the only places the month
// finders look (see monthStarts).
func hasMonthName(s string) bool { return monthKeywords.anyWord(s) }

// ids extracts identifiers from the masked text.
func (x *extractor) ids(s string, m *masker, cx ctx) {
	add := func(st, e int) {
		x.c.add(KindID, s[st:e], "", cx.ref)
		m.mask(st, e)
	}
	if strings.IndexByte(m.str(), '#') >= 0 {
		for _, loc := range issueFinder.find(m.str()) {
			if b := m.at(loc[0] - 1); isWordByte(b) || b == '&' || b == '/' {
				continue
			}
			add(loc[0], loc[1])
		}
	}
	for _, g := range shaCtxFinder.find(m.str()) {
		if t := s[g[2]:g[3]]; hasDigit(t) && strings.ContainsAny(strings.ToLower(t), "abcdef") {
			add(g[2], g[3])
		}
	}
	if strings.IndexByte(m.str(), '-') >= 0 {
		for _, loc := range hyphenIDFinder.find(m.str()) {
			t := s[loc[0]:loc[1]]
			if len(t) < 5 || !idBoundary(m, loc[0], loc[1]) || notAnID(strings.ReplaceAll(t, "-", "")) {
				continue
			}
			add(loc[0], loc[1])
		}
	}
	if strings.IndexByte(m.str(), '_') >= 0 {
		for _, loc := range snakeIDFinder.find(m.str()) {
			if !idBoundary(m, loc[0], loc[1]) {
				continue
			}
			add(loc[0], loc[1])
		}
	}
	for _, g := range ctxIDFinder.find(m.str()) {
		t := s[g[2]:g[3]]
		if len(t) < 3 || !hasDigit(t) || yearOnly(t) || !idBoundary(m, g[2], g[3]) {
			continue
		}
		add(g[2], g[3])
	}
	// Runs of letters and digits: a 40-hex SHA, or a token that looks like an id.
	w := m.str()
	for i := 0; i < len(w); {
		if !isAlnum(w[i]) {
			i++
			continue
		}
		j := i
		for j < len(w) && isAlnum(w[j]) {
			j++
		}
		if j-i >= 5 {
			t := s[i:j]
			if (j-i == 40 && isLowerHex(t) && hasDigit(t) && strings.ContainsAny(t, "abcdef") || looksLikeID(t)) && idBoundary(m, i, j) {
				add(i, j)
			}
		}
		i = j
	}
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

func isLowerHex(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// looksLikeID: letters and digits with a capital; all capitals and digits from 5
// characters (ZFA04Y, 4OG6T3, HAT136), or mixed case from 8 with at least two capitals and
// two digits (a random key); not a technical name such as SHA256 or UTF16.
func looksLikeID(t string) bool {
	var up, low, dig int
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= 'A' && c <= 'Z':
			up++
		case c >= 'a' && c <= 'z':
			low++
		case c >= '0' && c <= '9':
			dig++
		}
	}
	if up == 0 || dig == 0 {
		return false
	}
	if low > 0 && (len(t) < 8 || up < 2 || dig < 2) {
		return false
	}
	return !notAnID(t)
}

// notAnIDNames are the names a run of digits follows in an algorithm, a standard, a version
// or a product rather than in an id (SHA256, UTF8, ISO8601, GPT4, X86, COVID19).
var notAnIDNames = set("SHA", "UTF", "HTTP", "HTTPS", "TLS", "SSL", "ISO", "ES", "IPV", "GPT", "MD", "CP", "WIN",
	"AES", "RSA", "ECDSA", "ED", "INT", "UINT", "FLOAT", "X", "H", "PY", "CUDA", "SM", "ARM", "AMD", "RTX", "GTX",
	"DDR", "USB", "PCIE", "LTE", "IEEE", "ANSI", "POSIX", "BASE", "SQL", "HTML", "CSS", "ECMA", "OAUTH", "TLSV", "COVID")

// notAnID reports a token that is one of notAnIDNames followed by digits only.
func notAnID(t string) bool {
	i := len(t)
	for i > 0 && isDigit(t[i-1]) {
		i--
	}
	return i < len(t) && notAnIDNames[t[:i]]
}

// yearOnly reports a year of 1900 to 2099 alone.
func yearOnly(t string) bool {
	return len(t) == 4 && (t[:2] == "19" || t[:2] == "20") && isDigit(t[2]) && isDigit(t[3])
}

// idBoundary rejects a token glued to a path, a host, a version or a longer name.
func idBoundary(m *masker, s, e int) bool {
	switch b := m.at(s - 1); {
	case isWordByte(b), strings.IndexByte("-./\\@$%&+~#", b) >= 0:
		return false
	}
	switch b := m.at(e); {
	case isWordByte(b), strings.IndexByte("/\\@(", b) >= 0:
		return false
	case b == '-' || b == '.':
		if isWordByte(m.at(e + 1)) {
			return false
		}
	}
	return true
}

// isPath: a path whose last part has an extension (file.ext or a dotfile), not a fraction,
// a date or a MIME type.
func isPath(p string, before byte) bool {
	if isWordByte(before) || before == ':' || before == '/' || before == '\\' {
		return false
	}
	p = strings.TrimSuffix(p, "/")
	last := p[strings.LastIndexByte(p, '/')+1:]
	if !extRE.MatchString(last) {
		return false
	}
	if p[0] != '/' && p[0] != '~' && p[0] != '.' {
		first := p[:strings.IndexByte(p, '/')]
		if !strings.ContainsFunc(first, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) {
			return false
		}
	}
	return true
}

// diffSide reports a/ or b/ at st on a diff header line (--- a/x, +++ b/x, diff --git a/x b/x).
func diffSide(s string, st int) bool {
	if st+2 >= len(s) || (s[st] != 'a' && s[st] != 'b') || s[st+1] != '/' {
		return false
	}
	lo := max(0, st-300) // a diff header names its paths early in the line
	nl := strings.LastIndexByte(s[lo:st], '\n')
	if nl < 0 && lo > 0 {
		return false
	}
	line := s[lo+nl+1 : st]
	return strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "diff --git ")
}

// trimURL drops trailing punctuation and unbalanced closing brackets.
func trimURL(u string) string {
	for {
		t := strings.TrimRight(u, ".,;:!?*'\"")
		if strings.HasSuffix(t, ")") && strings.Count(t, "(") < strings.Count(t, ")") {
			t = t[:len(t)-1]
		}
		if strings.HasSuffix(t, "]") && strings.Count(t, "[") < strings.Count(t, "]") {
			t = t[:len(t)-1]
		}
		if t == u {
			return u
		}
		u = t
	}
}

// isShellArg rejects $1, $2, ... (shell and regexp arguments), which read like amounts.
func isShellArg(t string) bool {
	return len(t) == 2 && t[0] == '$' && isDigit(t[1])
}

// precededByNumber rejects a match that starts inside a longer number or version (3.13.0).
func precededByNumber(m *masker, s int) bool {
	b := m.at(s - 1)
	return isDigit(b) || (b == '.' || b == ',') && isDigit(m.at(s-2))
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isWordByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b == '_'
}

// numberCore is the number in t without thousands separators, sign, currency or trailing
// decimal zeros: "$1,286.50" -> "1286.5", "23553.0" -> "23553".
func numberCore(t string) string {
	t = strings.ReplaceAll(t, ",", "")
	n := numberRunRE.FindString(t)
	return canonNumber(n)
}

func canonNumber(n string) string {
	if strings.Contains(n, ".") {
		n = strings.TrimRight(n, "0")
		n = strings.TrimSuffix(n, ".")
	}
	if t := strings.TrimLeft(n, "0"); t != "" && !strings.HasPrefix(t, ".") {
		n = t
	} else if t == "" && n != "" {
		n = "0"
	}
	return n
}

var monthNum = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// dateKey returns the canonical form of a date text: YYYY-MM-DD, --MM-DD without a year,
// or "" when t is not a valid date. A numeric date with day and month both up to 12 is
// ambiguous and keeps its own text.
func dateKey(t string) string {
	full := func(re *regexp.Regexp) []string {
		if g := re.FindStringSubmatch(t); g != nil && g[0] == t {
			return g
		}
		return nil
	}
	if g := full(isoDateRE); g != nil {
		return g[1] + "-" + g[2] + "-" + g[3]
	}
	var y, mo, d int
	if g := full(dayMonthRE); g != nil {
		d, _ = strconv.Atoi(g[1])
		mo = monthNum[strings.ToLower(g[2][:3])]
		y, _ = strconv.Atoi(g[3])
	} else if g := full(monthDayRE); g != nil {
		mo = monthNum[strings.ToLower(g[1][:3])]
		d, _ = strconv.Atoi(g[2])
		if g[3] != "" {
			y, _ = strconv.Atoi(g[3])
		}
	} else if g := full(slashYMDRE); g != nil {
		y, _ = strconv.Atoi(g[1])
		mo, _ = strconv.Atoi(g[2])
		d, _ = strconv.Atoi(g[3])
	} else if g := full(slashDMYRE); g != nil {
		a, _ := strconv.Atoi(g[1])
		b, _ := strconv.Atoi(g[2])
		y, _ = strconv.Atoi(g[3])
		switch {
		case a > 12 && b <= 12:
			d, mo = a, b
		case b > 12 && a <= 12:
			d, mo = b, a
		case a <= 12 && b <= 12 && a > 0 && b > 0:
			return "ambiguous:" + t
		default:
			return ""
		}
	} else {
		return ""
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 {
		return ""
	}
	if y == 0 {
		return fmt.Sprintf("--%02d-%02d", mo, d)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
}

// digestRE finds a digest with its algorithm's label (sha256:..., sha512-... as npm writes it,
// h1:... of go.sum, md5:...), an address of 40 hex digits after 0x, or a bare run of 32, 64 or
// 128 hex digits in one case (an md5, sha256 or sha512 hex string; a 40-digit one is a commit
// id, taken by ids).
var digestRE = regexp.MustCompile(`\b(?:sha(?:1|224|256|384|512)|SHA(?:1|224|256|384|512)|md5|MD5|blake2[bs]|h1)[:=-][A-Za-z0-9+/_-]{16,}={0,2}|\b(?:0x[0-9a-fA-F]{40}|[0-9a-f]{128}|[0-9A-F]{128}|[0-9a-f]{64}|[0-9A-F]{64}|[0-9a-f]{32}|[0-9A-F]{32})\b`)

// digests finds the digests and hashes an agent acts on (digestRE): kept as facts, not as secrets.
func digests(s string, m *masker, add spanAdder) {
	w := m.str()
	if !hexRun(w, 32) && !containsAny(w, "sha", "SHA", "md5", "MD5", "h1:", "blake2") {
		return
	}
	for _, loc := range digestRE.FindAllStringIndex(w, -1) {
		t := s[loc[0]:loc[1]]
		if !hasDigit(t) || loc[0] > 0 && (isWordByte(w[loc[0]-1]) || strings.IndexByte("-./\\@$%&+~#", w[loc[0]-1]) >= 0) {
			continue
		}
		add(KindDigest, loc[0], loc[1], "")
	}
}

// hexRun reports a run of at least n hex digits in w.
func hexRun(w string, n int) bool {
	run := 0
	for i := 0; i < len(w); i++ {
		if isHex(w[i]) {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// versionRE finds a version of three numbers or more (semver: 2.31.0, v1.26.8, 1.4.0-rc.2,
// 1.0.0+build.5, Go's v0.0.0-20240515143000-a94a8fe5ccb1).
var versionRE = regexp.MustCompile(`\bv?\d{1,5}\.\d{1,5}\.\d{1,6}(?:-[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?(?:\+[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?`)

// versions finds versions (versionRE), in user text and tool arguments only (an install log
// or an assistant's aside names many a version nobody acts on); not a run of four numbers or more (an IP address, a
// date written 15.05.2024 is not three), nor one glued to a word, a path or a host.
func versions(s string, m *masker, add spanAdder) {
	w := m.str()
	if strings.IndexByte(w, '.') < 0 {
		return
	}
	for _, loc := range versionRE.FindAllStringIndex(w, -1) {
		st, e := loc[0], loc[1]
		if st > 0 && (isWordByte(w[st-1]) || strings.IndexByte("./\\@$%&+~#:-", w[st-1]) >= 0) {
			continue
		}
		if e < len(w) && (isWordByte(w[e]) || w[e] == '/' || w[e] == '.' && e+1 < len(w) && isWordByte(w[e+1])) {
			continue
		}
		add(KindVersion, st, e, "")
	}
}
