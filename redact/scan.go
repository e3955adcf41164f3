package redact

import (
	"math"
	"slices"
)

// scanner finds, in one pass over a text, where each built-in pattern may start.
//
// An anchor of four bytes or more is keyed on its rarest four bytes (by a rough frequency
// of bytes in English, code and JSON), ASCII case folded, hashed into a table of 1<<quadBits
// buckets; a shorter one on its rarest pair of bytes. The scan keeps the last four bytes of
// the text folded in a word, tests one bit of each table per byte (16 KB in all, which stay
// in the first-level cache) and, on a hit, compares each anchor of the bucket around it
// (ASCII case-insensitively for folded anchors). An anchor shared by patterns is compared
// once.
type scanner struct {
	pairBits [1 << 10]uint64
	quadBits [1 << (quadBits - 6)]uint64
	// pair and quad hold, by key, 1 + the index of the key's bucket in buckets (0: none).
	pair, quad [1 << 16]uint16
	buckets    [][]*anchorRef
	ps         []*pattern
	evasions   bool // see withEvasions
}

const quadBits = 16

func quadHash(w uint32) uint32 { return (w * 0x9E3779B1) >> (32 - quadBits) }

type anchorRef struct {
	anchor   string
	off      int // offset of the key bytes in anchor
	fold     bool
	patterns []int
	evade    bool // a pair that may start an evasion (see withEvasions), not an anchor
}

var builtinScan = newScanner(builtins).withEvasions()

// withEvasions adds to s, after its anchors, the pairs of bytes where an evasion that
// normalize undoes may start: a backslash before u, x or U, a percent sign before a hex
// digit, an ampersand before a letter, a digit or '#', and an ASCII byte before a byte of
// 0x80 or more (the start of a run of non-ASCII bytes). scanInto collects where they occur,
// so that the check for evasions reads only those places, not the whole text again.
func (s *scanner) withEvasions() *scanner {
	ev := &anchorRef{evade: true}
	shared := uint16(0) // the bucket of the pairs that key nothing else
	add := func(b0, b1 byte) {
		h := uint16(b0)<<8 | uint16(b1)
		s.pairBits[h>>6] |= 1 << (h & 63)
		if s.pair[h] != 0 {
			s.buckets[s.pair[h]-1] = append(s.buckets[s.pair[h]-1], ev)
			return
		}
		if shared == 0 {
			s.buckets = append(s.buckets, []*anchorRef{ev})
			shared = uint16(len(s.buckets))
		}
		s.pair[h] = shared
	}
	for _, c := range []byte("uxU") {
		add('\\', c)
	}
	for c := range 256 {
		switch b := byte(c); {
		case isHex(b):
			add('%', b)
			add('&', b)
		case b >= 'g' && b <= 'z' || b >= 'G' && b <= 'Z' || b >= '0' && b <= '9' || b == '#':
			add('&', b)
		}
	}
	for b0 := range 0x80 {
		for b1 := 0x80; b1 < 0x100; b1++ {
			add(byte(b0), byte(b1))
		}
	}
	s.evasions = true
	return s
}

func newScanner(ps []*pattern) *scanner {
	s := &scanner{ps: ps}
	put := func(table *[1 << 16]uint16, k uint16, r *anchorRef) {
		if table[k] == 0 {
			s.buckets = append(s.buckets, nil)
			table[k] = uint16(len(s.buckets))
		}
		s.buckets[table[k]-1] = append(s.buckets[table[k]-1], r)
	}
	type refKey struct {
		anchor string
		off    int
		fold   bool
	}
	seen := map[refKey]*anchorRef{}
	for pi, p := range ps {
		for _, a := range p.anchors {
			if len(a) < 2 {
				panic("redact: anchor shorter than two bytes: " + a)
			}
			width := 2
			if len(a) >= 4 {
				width = 4
			}
			key := refKey{anchor: a, off: rarestRun(a, p.fold, width), fold: p.fold}
			if r := seen[key]; r != nil {
				if !slices.Contains(r.patterns, pi) {
					r.patterns = append(r.patterns, pi)
				}
				continue
			}
			r := &anchorRef{anchor: a, off: key.off, fold: p.fold, patterns: []int{pi}}
			seen[key] = r
			k := a[r.off : r.off+width]
			if width == 4 {
				h := quadHash(foldWord(k))
				s.quadBits[h>>6] |= 1 << (h & 63)
				put(&s.quad, uint16(h), r)
				continue
			}
			// A pair is looked up as it is: a folded one under each case of its letters.
			for _, b0 := range cases(k[0], p.fold) {
				for _, b1 := range cases(k[1], p.fold) {
					h := uint16(b0)<<8 | uint16(b1)
					s.pairBits[h>>6] |= 1 << (h & 63)
					put(&s.pair, h, r)
				}
			}
		}
	}
	return s
}

func cases(b byte, fold bool) []byte {
	if fold && lowerByte(b) != upper(b) {
		return []byte{lowerByte(b), upper(b)}
	}
	return []byte{b}
}

// foldWord is the four bytes of k, ASCII lower-cased, in a word.
func foldWord(k string) uint32 {
	return uint32(lowerTable[k[0]])<<24 | uint32(lowerTable[k[1]])<<16 | uint32(lowerTable[k[2]])<<8 | uint32(lowerTable[k[3]])
}

var lowerTable = func() (t [256]byte) {
	for c := range 256 {
		t[c] = lowerByte(byte(c))
	}
	return t
}()

// found is what a scan finds in one text: for each pattern, the ascending starts of its
// candidate matches; the patterns that have any (touched, ascending); and the ascending
// places where an evasion may start (see withEvasions and evasiveAt). A found is reused
// from one text to the next, and only what the last text touched is reset, so a scan costs
// what the text holds, not the number of patterns.
type found struct {
	starts  [][]int
	touched []int
	ev      []int
}

// maxKeptStarts bounds the starts of one pattern whose slice scanInto reuses.
const maxKeptStarts = 1024

// scanInto finds, for each pattern of s, the ascending starts of its candidate matches in
// text, into f, which holds the result of an earlier scan of s or nothing.
func (s *scanner) scanInto(text string, f *found) {
	if cap(f.ev) > maxKeptStarts {
		f.ev = nil
	}
	f.ev = f.ev[:0]
	if len(f.starts) != len(s.ps) {
		f.starts, f.touched = make([][]int, len(s.ps)), f.touched[:0]
	}
	for _, i := range f.touched {
		if cap(f.starts[i]) > maxKeptStarts {
			f.starts[i] = nil
		}
		f.starts[i] = f.starts[i][:0]
	}
	f.touched = f.touched[:0]
	if len(text) < 2 {
		return
	}
	pb, qb := &s.pairBits, &s.quadBits
	// The first three positions, where no four bytes end yet.
	w := uint32(lowerTable[text[0]]) // text[i-3:i+1], folded
	for i := 1; i < min(3, len(text)); i++ {
		c := text[i]
		w = w<<8 | uint32(lowerTable[c])
		if k := uint16(text[i-1])<<8 | uint16(c); pb[k>>6]&(1<<(k&63)) != 0 {
			s.candidates(text, i-1, s.buckets[s.pair[k]-1], f)
		}
	}
	// The rest: the pair (prev, c) and the hash of w tested together, one branch a byte
	// that is almost never taken.
	prev := uint16(text[min(2, len(text)-1)])
	for i := 3; i < len(text); i++ {
		c := text[i]
		w = w<<8 | uint32(lowerTable[c])
		k := prev<<8 | uint16(c)
		prev = uint16(c)
		h := uint16((w * 0x9E3779B1) >> (32 - quadBits))
		if (pb[k>>6]>>(k&63)|qb[h>>6]>>(h&63))&1 == 0 {
			continue
		}
		if pb[k>>6]&(1<<(k&63)) != 0 {
			s.candidates(text, i-1, s.buckets[s.pair[k]-1], f)
		}
		if qb[h>>6]&(1<<(h&63)) != 0 {
			s.candidates(text, i-3, s.buckets[s.quad[h]-1], f)
		}
	}
	slices.Sort(f.touched)
	for _, i := range f.touched {
		if starts := f.starts[i]; !slices.IsSorted(starts) {
			slices.Sort(starts)
		}
		f.starts[i] = slices.Compact(f.starts[i])
	}
}

// candidates compares the anchors of a bucket whose key bytes are at text[at:] and adds
// the starts of those that match to f.
func (s *scanner) candidates(text string, at int, refs []*anchorRef, f *found) {
	for _, r := range refs {
		if r.evade {
			f.ev = append(f.ev, at)
			continue
		}
		pos := at - r.off
		if pos < 0 || pos+len(r.anchor) > len(text) {
			continue
		}
		if r.fold {
			if !equalFoldASCII(text[pos:pos+len(r.anchor)], r.anchor) {
				continue
			}
		} else if text[pos:pos+len(r.anchor)] != r.anchor {
			continue
		}
		for _, pi := range r.patterns {
			p := s.ps[pi]
			st := pos - p.back
			if p.start != nil {
				st = p.start(text, pos)
			}
			if st >= 0 {
				if len(f.starts[pi]) == 0 {
					f.touched = append(f.touched, pi)
				}
				f.starts[pi] = append(f.starts[pi], st)
			}
		}
	}
}

// rarestRun returns the offset of the run of width adjacent bytes of a that is least
// frequent in ordinary text (estimated as the product of the bytes' frequencies).
func rarestRun(a string, fold bool, width int) int {
	freq := func(b byte) float64 {
		if fold {
			return float64(byteFreq(lowerByte(b)) + byteFreq(upper(b)))
		}
		return float64(byteFreq(b))
	}
	best, bestF := 0, math.Inf(1)
	for i := 0; i+width <= len(a); i++ {
		f := 1.0
		for j := range width {
			f *= freq(a[i+j])
		}
		if f < bestF {
			best, bestF = i, f
		}
	}
	return best
}

// letterFreq is the frequency of a..z in English text, per 1000 letters.
var letterFreq = [26]int{82, 15, 28, 43, 127, 22, 20, 61, 70, 2, 8, 40, 24, 67, 75, 19, 1, 60, 63, 91, 28, 10, 24, 2, 20, 1}

// byteFreq is a rough frequency of b in English prose, code and JSON.
func byteFreq(b byte) int {
	switch {
	case b >= 'a' && b <= 'z':
		return letterFreq[b-'a'] * 10
	case b >= 'A' && b <= 'Z':
		return letterFreq[b-'A']
	case b >= '0' && b <= '9':
		return 100
	}
	switch b {
	case ' ':
		return 1500
	case '_', '-', '.':
		return 600 // snake_case ids, hyphenated words, dotted names
	case '"', ',', ':', '\n':
		return 150
	case '/':
		return 100
	}
	return 50
}

func lowerByte(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func upper(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// equalFoldASCII compares s with the lower-case anchor a, ignoring ASCII case in s.
func equalFoldASCII(s, a string) bool {
	for i := 0; i < len(a); i++ {
		if lowerByte(s[i]) != a[i] {
			return false
		}
	}
	return true
}
