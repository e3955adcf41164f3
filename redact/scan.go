package redact

import (
	"math"
	"slices"
)

// scanner finds, in one pass over a text, where each built-in pattern may start.
//
// Every anchor is keyed on its rarest byte (by a rough frequency of bytes in English,
// code and JSON), so that the scan stops on few bytes: it looks the byte up in a table and,
// on a hit, compares the whole anchor around it (ASCII case-insensitively for folded
// anchors).
type scanner struct {
	hit  [1 << 16]uint16 // by the pair of bytes at the key offset: 1 + index into refs, or 0
	refs [][]anchorRef
	ps   []*pattern
}

type anchorRef struct {
	pattern int
	anchor  string
	off     int // offset of the key pair of bytes in anchor
	fold    bool
}

var builtinScan = newScanner(builtins)

func newScanner(ps []*pattern) *scanner {
	s := &scanner{ps: ps}
	add := func(b0, b1 byte, r anchorRef) {
		k := uint16(b0)<<8 | uint16(b1)
		if s.hit[k] == 0 {
			s.refs = append(s.refs, nil)
			s.hit[k] = uint16(len(s.refs))
		}
		g := s.hit[k] - 1
		if !slices.Contains(s.refs[g], r) {
			s.refs[g] = append(s.refs[g], r)
		}
	}
	for pi, p := range ps {
		for _, a := range p.anchors {
			if len(a) < 2 {
				panic("redact: anchor shorter than two bytes: " + a)
			}
			off := rarest(a, p.fold)
			r := anchorRef{pattern: pi, anchor: a, off: off, fold: p.fold}
			b0, b1 := a[off], a[off+1]
			add(b0, b1, r)
			if p.fold {
				add(upper(b0), b1, r)
				add(b0, upper(b1), r)
				add(upper(b0), upper(b1), r)
			}
		}
	}
	return s
}

// starts are the candidate starts one scan found: for each pattern that has any (ascending
// by pattern), its starts, ascending and distinct. Most texts have none or a few, so the
// result is sparse rather than a slice per pattern.
type starts []patternStarts

type patternStarts struct {
	pattern int
	at      []int
}

// of returns the starts of pattern k (nil: none).
func (ss starts) of(k int) []int {
	i, ok := slices.BinarySearchFunc(ss, k, func(p patternStarts, k int) int { return p.pattern - k })
	if !ok {
		return nil
	}
	return ss[i].at
}

// scan returns, for each pattern, the ascending starts of its candidate matches.
func (s *scanner) scan(text string) starts {
	var buf [16][2]int
	found := buf[:0] // pattern, start
	for i := 0; i+1 < len(text); i++ {
		g := s.hit[uint16(text[i])<<8|uint16(text[i+1])]
		if g == 0 {
			continue
		}
		for _, r := range s.refs[g-1] {
			pos := i - r.off
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
			p := s.ps[r.pattern]
			st := pos - p.back
			if p.start != nil {
				st = p.start(text, pos)
			}
			if st >= 0 {
				found = append(found, [2]int{r.pattern, st})
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	found = slices.Compact(found)
	n := 1
	for i := 1; i < len(found); i++ {
		if found[i][0] != found[i-1][0] {
			n++
		}
	}
	out := make(starts, 0, n)
	at := make([]int, len(found)) // the starts of every pattern, one after another
	from := 0
	for i, f := range found {
		at[i] = f[1]
		if i+1 == len(found) || found[i+1][0] != f[0] {
			out = append(out, patternStarts{pattern: f[0], at: at[from : i+1 : i+1]})
			from = i + 1
		}
	}
	return out
}

// rarest returns the offset of the pair of adjacent bytes of a that is least frequent in
// ordinary text (estimated as the product of the bytes' frequencies).
func rarest(a string, fold bool) int {
	freq := func(b byte) int {
		if fold {
			return byteFreq(lowerByte(b)) + byteFreq(upper(b))
		}
		return byteFreq(b)
	}
	best, bestF := 0, math.MaxInt
	for i := 0; i+1 < len(a); i++ {
		f := freq(a[i]) * freq(a[i+1])
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
