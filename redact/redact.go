package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// KindCustom is the kind of secrets matched by the extra patterns given to [New].
const KindCustom = "custom"

// Marker returns the text that replaces a secret of the given kind: "[REDACTED:kind]".
func Marker(kind string) string { return "[REDACTED:" + kind + "]" }

const markerPrefix = "[REDACTED:"

// Redactor replaces secrets in text with "[REDACTED:kind]". It is immutable and safe for
// concurrent use.
type Redactor struct {
	extra []*pattern // the user's patterns, run after the built-in ones
	// own leaves gitleaks' rules out, and unfiltered runs each of them on every text (no
	// keyword prefilter): for measuring them.
	own, unfiltered bool
}

// pattern is one compiled rule.
//
// A built-in pattern is anchored: one scan of the text finds where the literal anchors of
// every built-in pattern occur, and each pattern's regular expression, compiled with a
// leading ^, is tried only at those places. No regular expression runs at every byte, and
// no pattern makes more than one pass. Extra patterns run unanchored, with FindAll.
type pattern struct {
	kind string
	re   *regexp.Regexp
	// anchors are literals every match contains; when fold is set they are lower-case and
	// looked up in the ASCII-lowered text.
	anchors []string
	fold    bool
	// back is how many bytes before its anchor a match starts; start, when set, computes
	// the start from the anchor's position instead.
	back  int
	start func(text string, pos int) int
	// window bounds the text a match may span (default 320 bytes; -1: to the end).
	window int
	// pre, when set, is a cheap test of a candidate start before the regular expression.
	pre func(text string, st int) bool
	// wordStart requires a non-word byte (or the start of the text) before the match.
	wordStart bool
	// groups are the capture groups that may hold the secret; the first that took part in
	// the match is replaced. Empty means the whole match.
	groups []int
	// valid, when set, vets a match: m is the submatch index slice and [s, e) the secret.
	valid func(text string, m []int, s, e int) bool
	// kindOf, when set, names the kind of a match instead of kind.
	kindOf func(text string, m []int) string
	// lazy, when set and re is not, compiles re at its first use (see anchorAt).
	lazy func() *regexp.Regexp
	// match, when set, is tried at a candidate start instead of re; it returns the
	// submatch index slice or nil.
	match func(text string, st int) []int
	// scanAll, when set, finds the matches in the whole text itself (no anchors).
	scanAll func(text string) [][]int
	// split lets a secret span markers of earlier patterns: the text between them is
	// replaced, the markers kept (Cookie: a=[REDACTED:jwt]; b=c).
	split bool
}

// New returns a Redactor with the built-in patterns plus extra user regular expressions
// (Go RE2 syntax), whose whole matches are replaced with the kind "custom". An invalid
// extra pattern, or one that matches the empty string, is an error naming its index.
func New(extra []string) (*Redactor, error) {
	r := &Redactor{}
	for i, src := range extra {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("redact: extra pattern %d: %w", i, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redact: extra pattern %d: %q matches the empty string", i, src)
		}
		r.extra = append(r.extra, &pattern{kind: KindCustom, re: re})
	}
	return r, nil
}

// Kinds lists the built-in kinds, in the order the patterns run. It does not include
// [KindCustom].
func Kinds() []string { return slices.Clone(allKinds) }

// Redact returns text with every secret replaced, and the number of replacements.
//
// The text is read twice when it holds a possible evasion (a string escape, an HTML entity,
// an invisible or full-width character, a look-alike letter, a percent-encoded byte): as it
// is, and normalised (see normalize). A secret found in the normalised text is replaced in
// the original, whole: from the first byte of the first character it came from to the last
// byte of the last, escapes and invisible characters included.
func (r *Redactor) Redact(text string) (string, int) {
	ss := r.secrets(text)
	return apply(text, ss), len(ss)
}

// secret is a span of a text to replace with the marker of kind.
type secret struct {
	s, e int
	kind string
}

// secrets returns the spans of the secrets of text, ascending and disjoint.
func (r *Redactor) secrets(text string) []secret {
	ss, windows := r.secretsCand(text, 0)
	if len(windows) == 0 {
		return ss
	}
	// A text quoted once more (a command line or a config file in a JSON string: a tool
	// call's arguments; JSON in that JSON) is read again with its string escapes undone, up
	// to maxUnquote levels, by the rules and with its evasions undone (not its encodings),
	// when an anchor or keyword of a rule has an escaped quote or backslash near it.
	var levels []unquotedText
	for cur := text; len(levels) < maxUnquote; {
		u, ok := unquoted(cur)
		if !ok {
			break
		}
		levels = append(levels, u)
		found := r.secretsAt(u.text, maxEncodedDepth)
		for k := len(levels) - 1; k >= 0; k-- {
			found = levels[k].back(found)
		}
		ss = merge(ss, found)
		cur = u.text
	}
	return ss
}

// maxUnquote bounds the levels of string escapes undone one inside another (unquoted).
const maxUnquote = 2

// maxEncodedDepth bounds the encodings read one inside another (base64 of hex of a key).
const maxEncodedDepth = 2

// secretsAt is secrets of a text decoded from depth levels of base64 or hex.
func (r *Redactor) secretsAt(text string, depth int) []secret {
	ss, _ := r.secretsCand(text, depth)
	return ss
}

// secretsCand is secretsAt, and the windows of text to read unquoted (plainCand; all of text
// when its normalised copy has one).
func (r *Redactor) secretsCand(text string, depth int) ([]secret, [][2]int) {
	if text == "" {
		return nil, nil
	}
	ss, evade, cand := r.plainCand(text)
	if depth < maxEncodedDepth {
		ss = merge(ss, r.encoded(text, depth))
	}
	// An evasion may hide another (%\u0032F is %2F once the escape is decoded): normalise
	// up to three times, reading each result, and map what is found back level by level.
	var levels []normalized
	for cur := text; len(levels) < 3; {
		n, ok := normalizeIf(cur, evade)
		if !ok {
			break
		}
		levels = append(levels, n)
		var found []secret
		var c [][2]int
		found, evade, c = r.plainCand(n.text)
		if len(c) > 0 {
			cand = append(cand, [2]int{0, len(text)}) // a window of the normalised text: read all of text
		}
		if depth < maxEncodedDepth {
			found = merge(found, r.encoded(n.text, depth))
		}
		for k := len(levels) - 1; k >= 0; k-- {
			found = levels[k].back(found)
		}
		ss = merge(ss, found)
		cur = n.text
	}
	return ss, cand
}

// plain returns the spans of the secrets the patterns find in text as it is, and whether
// text holds an evasion that normalize undoes (evasive, found with the scan).
func (r *Redactor) plain(text string) ([]secret, bool) {
	ss, evade, _ := r.plainCand(text)
	return ss, evade
}

// plainCand is plain, and the windows of text around the anchors and keywords of the rules
// that run only where one occurs with an escaped quote or backslash near them (escapedNear):
// elsewhere, a copy of text with its string escapes undone (unquoted) holds no more than text.
func (r *Redactor) plainCand(text string) ([]secret, bool, [][2]int) {
	var t tracker
	buf := scratchPool.Get().(*scratch)
	defer scratchPool.Put(buf)
	passes := r.passes(text, buf)
	var cand [][2]int
	for _, ps := range passes {
		if ps.p.scanAll == nil && len(cand) == 0 {
			cand = escapedNear(text, ps.starts, ps.all, cand)
		}
	}
	evade := evasiveAt(text, r.found(buf).ev)
	markers := markerSpans(text)
	for i, ps := range passes {
		var ms [][]int
		switch p := ps.p; {
		case p.scanAll != nil:
			ms = p.scanAll(text)
		case ps.all:
			ms = p.re.FindAllStringSubmatchIndex(text, -1)
		case len(ps.starts) > 0:
			ms = p.find(text, ps.starts)
		}
		if len(ms) == 0 {
			continue
		}
		var edits []edit
		text, edits = ps.p.replace(text, ms, markers)
		if len(edits) > 0 {
			t.record(edits)
			for j := i + 1; j < len(passes); j++ {
				passes[j].starts = shift(passes[j].starts, edits)
			}
			markers = shiftMarkers(markers, edits)
		}
	}
	return t.secrets(), evade, cand
}

// pass is a pattern to run on a text: at its candidate starts, or (all) unanchored over the
// whole text.
type pass struct {
	p      *pattern
	starts []int
	all    bool
}

// passes returns what runs on text, in order: the built-in patterns (at the starts one scan
// found), gitleaks' rules whose keywords the text holds (see glRules.run), and the user's
// patterns (one FindAll pass each).
func (r *Redactor) passes(text string, buf *scratch) []pass {
	f := r.found(buf)
	if r.own || r.unfiltered {
		builtinScan.scanInto(text, f)
	} else {
		gitleaksRules().both.scanInto(text, f) // one scan for both rule sets
	}
	// The built-in patterns with a start (those the scan touched, ascending) and those that
	// scan the whole text themselves, in builtins' order; without either, a pattern finds
	// nothing. Most texts touch a few of the patterns, not each of them in turn.
	out := buf.passes[:0]
	touched, all := f.touched, scanAllBuiltins
	for {
		i := len(builtins)
		if len(touched) > 0 {
			i = touched[0]
		}
		if len(all) > 0 && all[0] <= i {
			if all[0] == i {
				touched = touched[1:]
			}
			i, all = all[0], all[1:]
		} else if i < len(builtins) {
			touched = touched[1:]
		} else {
			break // the rest touched are gitleaks' rules (runFound)
		}
		out = append(out, pass{p: builtins[i], starts: f.starts[i]})
	}
	switch {
	case r.unfiltered:
		for _, p := range gitleaksRules().full {
			out = append(out, pass{p: p, all: true})
		}
	case !r.own:
		out, buf.hits = gitleaksRules().runFound(f, len(builtins), out, buf.hits)
	}
	for _, p := range r.extra {
		out = append(out, pass{p: p, all: true})
	}
	buf.passes = out
	return out
}

// scanAllBuiltins are the indexes in builtins of the patterns that scan the whole text
// themselves (pattern.scanAll), ascending.
var scanAllBuiltins = func() []int {
	var out []int
	for i, p := range builtins {
		if p.scanAll != nil {
			out = append(out, i)
		}
	}
	return out
}()

// found is where r's scan of a text puts what it finds: r scans with builtinScan alone, or
// with the scanner of gitleaks' rules and the built-in patterns together.
func (r *Redactor) found(buf *scratch) *found {
	if r.own || r.unfiltered {
		return &buf.own
	}
	return &buf.both
}

// scratch holds what plain builds and drops for each text, kept for the next text: the
// scans' candidate starts and the list of passes. Over the recorded conversations they
// were most of what Redact allocated, and so most of the collector's work.
type scratch struct {
	own, both found // of builtinScan, of gitleaks' rules and the built-in patterns together
	passes    []pass
	hits      []int // gitleaks' rules that run (glRules.runFound)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// tracker maps the markers the patterns put into a text, one pass after another, back to
// the spans of the original text they replaced.
type tracker struct{ recs []placed }

// placed is a marker at [cs, ce) of the current text that replaced [os, oe) of the original.
type placed struct {
	cs, ce, os, oe int
	kind           string
}

// record adds the edits of one pass (ascending, in the offsets of the text before it). An
// edit never overlaps a marker placed before, so each replaced a span of original text.
func (t *tracker) record(edits []edit) {
	out := make([]placed, 0, len(t.recs)+len(edits))
	k, delta, shiftBy := 0, 0, 0 // delta: current minus original before the edit; shiftBy: this pass's growth so far
	for _, ed := range edits {
		for k < len(t.recs) && t.recs[k].ce <= ed.s {
			r := t.recs[k]
			delta += (r.ce - r.cs) - (r.oe - r.os)
			r.cs, r.ce = r.cs+shiftBy, r.ce+shiftBy
			out = append(out, r)
			k++
		}
		cs := ed.s + shiftBy
		out = append(out, placed{cs: cs, ce: cs + ed.n, os: ed.s - delta, oe: ed.e - delta, kind: ed.kind})
		shiftBy += ed.n - (ed.e - ed.s)
	}
	for ; k < len(t.recs); k++ {
		r := t.recs[k]
		r.cs, r.ce = r.cs+shiftBy, r.ce+shiftBy
		out = append(out, r)
	}
	t.recs = out
}

func (t *tracker) secrets() []secret {
	ss := make([]secret, len(t.recs))
	for i, r := range t.recs {
		ss[i] = secret{r.os, r.oe, r.kind}
	}
	return ss
}

// apply replaces the spans of ss (ascending, disjoint) with their markers.
func apply(text string, ss []secret) string {
	if len(ss) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, s := range ss {
		b.WriteString(text[last:s.s])
		b.WriteString(Marker(s.kind))
		last = s.e
	}
	b.WriteString(text[last:])
	return b.String()
}

// merge returns the union of two span lists (each ascending and disjoint): overlapping
// spans become one, with the kind of the one that starts first.
func merge(a, b []secret) []secret {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	all := append(slices.Clone(a), b...)
	slices.SortStableFunc(all, func(x, y secret) int { return x.s - y.s })
	out := all[:1]
	for _, s := range all[1:] {
		if last := &out[len(out)-1]; s.s < last.e {
			last.e = max(last.e, s.e)
			continue
		}
		out = append(out, s)
	}
	return out
}

// defaultWindow bounds the bytes an anchored match may span, so that trying a candidate
// costs in proportion to the match, not to the rest of the text.
const defaultWindow = 320

// find returns the non-overlapping matches of an anchored pattern tried at the candidate
// starts (ascending).
func (p *pattern) find(text string, starts []int) [][]int {
	var ms [][]int
	end := 0
	for _, st := range starts {
		if st < end {
			continue // inside the previous match
		}
		// A prefixed token glued to an identifier by '_' (fetch_AKIA..., call_7_ghp_...: tool
		// call ids and function names are built so) still starts a match.
		if p.wordStart && st > 0 && isWordByte(text[st-1]) && text[st-1] != '_' {
			continue
		}
		if p.pre != nil && !p.pre(text, st) {
			continue
		}
		lim := len(text)
		switch {
		case p.window == 0:
			lim = min(lim, st+defaultWindow)
		case p.window > 0:
			lim = min(lim, st+p.window)
		}
		var m []int
		if p.match != nil {
			if m = p.match(text, st); m == nil {
				continue
			}
		} else {
			re := p.re
			if re == nil {
				re = p.lazy()
			}
			if m = re.FindStringSubmatchIndex(text[st:lim]); m == nil {
				continue
			}
			for i := range m {
				if m[i] >= 0 {
					m[i] += st
				}
			}
		}
		ms = append(ms, m)
		end = max(m[1], st+1)
	}
	return ms
}

// edit records that text[s:e] became a marker of n bytes, of kind.
type edit struct {
	s, e, n int
	kind    string
}

// shift moves candidate starts from the offsets of a text to those of the text after
// edits (ascending). A start inside a replaced secret moves to the end of its marker.
func shift(starts []int, edits []edit) []int {
	if len(starts) == 0 {
		return starts
	}
	out := starts[:0]
	delta, k := 0, 0
	for _, st := range starts {
		for k < len(edits) && edits[k].e <= st {
			delta += edits[k].n - (edits[k].e - edits[k].s)
			k++
		}
		if k < len(edits) && edits[k].s <= st {
			out = append(out, edits[k].s+edits[k].n+delta) // inside a secret: after its marker
			continue
		}
		out = append(out, st+delta)
	}
	return slices.Compact(out)
}

// shiftMarkers returns the marker spans after edits: the old ones moved, and the new ones.
// Edits never overlap an old marker.
func shiftMarkers(markers [][]int, edits []edit) [][]int {
	out := make([][]int, 0, len(markers)+len(edits))
	delta, k := 0, 0
	for _, m := range markers {
		for k < len(edits) && edits[k].e <= m[0] {
			s := edits[k].s + delta
			out = append(out, []int{s, s + edits[k].n})
			delta += edits[k].n - (edits[k].e - edits[k].s)
			k++
		}
		out = append(out, []int{m[0] + delta, m[1] + delta})
	}
	for ; k < len(edits); k++ {
		s := edits[k].s + delta
		out = append(out, []int{s, s + edits[k].n})
		delta += edits[k].n - (edits[k].e - edits[k].s)
	}
	return out
}

// replace replaces the secret of each match with its marker, and returns the new text
// and the replacements made.
func (p *pattern) replace(text string, ms [][]int, markers [][]int) (string, []edit) {
	var b strings.Builder
	var edits []edit
	last := 0
	for _, m := range ms {
		s, e := m[0], m[1]
		if len(p.groups) > 0 {
			s, e = -1, -1
			for _, g := range p.groups {
				if m[2*g] >= 0 {
					s, e = m[2*g], m[2*g+1]
					break
				}
			}
		}
		if s < 0 || s >= e || s < last {
			continue
		}
		spans := [][]int{{s, e}}
		if overlaps(markers, s, e) {
			if !p.split {
				continue
			}
			spans = gaps(text, markers, s, e)
		}
		if p.valid != nil && !p.valid(text, m, s, e) {
			continue
		}
		kind := p.kind
		if p.kindOf != nil {
			kind = p.kindOf(text, m)
		}
		if len(edits) == 0 {
			b.Grow(len(text))
		}
		mk := Marker(kind)
		for _, sp := range spans {
			b.WriteString(text[last:sp[0]])
			b.WriteString(mk)
			edits = append(edits, edit{sp[0], sp[1], len(mk), kind})
			last = sp[1]
		}
	}
	if len(edits) == 0 {
		return text, nil
	}
	b.WriteString(text[last:])
	return b.String(), edits
}

// markerSpans returns the spans of the markers already in text.
func markerSpans(text string) [][]int {
	var spans [][]int
	for i := 0; ; {
		j := strings.Index(text[i:], markerPrefix)
		if j < 0 {
			return spans
		}
		s := i + j
		e := s + len(markerPrefix)
		for e < len(text) && isWordByte(text[e]) {
			e++
		}
		if e < len(text) && text[e] == ']' && e > s+len(markerPrefix) {
			spans = append(spans, []int{s, e + 1})
			i = e + 1
		} else {
			i = s + 1
		}
	}
}

// gaps returns the parts of [s, e) between the markers, those holding a letter or digit.
func gaps(text string, markers [][]int, s, e int) [][]int {
	var out [][]int
	at := s
	for _, sp := range markers {
		if sp[1] <= at {
			continue
		}
		if sp[0] >= e {
			break
		}
		if sp[0] > at && hasAlnum(text[at:sp[0]]) {
			out = append(out, []int{at, sp[0]})
		}
		at = sp[1]
	}
	if at < e && hasAlnum(text[at:e]) {
		out = append(out, []int{at, e})
	}
	return out
}

func hasAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if isWordByte(s[i]) && s[i] != '_' {
			return true
		}
	}
	return false
}

func overlaps(spans [][]int, s, e int) bool {
	for _, sp := range spans {
		if sp[0] < e && s < sp[1] {
			return true
		}
		if sp[0] >= e {
			break
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b == '_'
}

// escapeWindow is how far from an anchor or keyword an escaped quote or backslash makes the
// text worth reading unquoted: the window of an anchored match (defaultWindow).
const escapeWindow = defaultWindow

// escapedNear appends to windows the window of escapeWindow bytes either side of each start
// (ascending; of the whole text when all is set) that holds an escaped quote or backslash
// (\", \', \\).
func escapedNear(text string, starts []int, all bool, windows [][2]int) [][2]int {
	has := func(lo, hi int) bool {
		for i := lo; i < hi-1; i++ {
			if text[i] == '\\' && (text[i+1] == '"' || text[i+1] == '\'' || text[i+1] == '\\') {
				return true
			}
		}
		return false
	}
	if all {
		if has(0, len(text)) {
			windows = append(windows, [2]int{0, len(text)})
		}
		return windows
	}
	for _, st := range starts {
		lo, hi := max(st-escapeWindow, 0), min(st+escapeWindow, len(text))
		if n := len(windows); n > 0 && windows[n-1][1] >= hi && windows[n-1][0] <= lo {
			continue // inside the last window taken
		}
		if has(lo, hi) {
			return append(windows, [2]int{lo, hi}) // one is enough: the whole text is read
		}
	}
	return windows
}
