package redact

import "slices"

// scanner finds, in one pass over a text, where each built-in pattern may start.
//
// Every anchor is keyed on its rarest byte (by a rough frequency of bytes in English,
// code and JSON), so that the scan stops on few bytes: it looks the byte up in a table and,
// on a hit, compares the whole anchor around it (ASCII case-insensitively for folded
// anchors).
type scanner struct {
	hit  [256]uint16 // 1 + index into refs, or 0
	refs [][]anchorRef
	ps   []*pattern
}

type anchorRef struct {
	pattern int
	anchor  string
	off     int // offset of the key byte in anchor
	fold    bool
}

var builtinScan = newScanner(builtins)

func newScanner(ps []*pattern) *scanner {
	s := &scanner{ps: ps}
	add := func(b byte, r anchorRef) {
		if s.hit[b] == 0 {
			s.refs = append(s.refs, nil)
			s.hit[b] = uint16(len(s.refs))
		}
		g := s.hit[b] - 1
		s.refs[g] = append(s.refs[g], r)
	}
	for pi, p := range ps {
		for _, a := range p.anchors {
			off := rarest(a, p.fold)
			r := anchorRef{pattern: pi, anchor: a, off: off, fold: p.fold}
			b := a[off]
			add(b, r)
			if p.fold {
				if u := upper(b); u != b {
					add(u, r)
				}
			}
		}
	}
	return s
}

// scan returns, for each pattern, the ascending starts of its candidate matches.
func (s *scanner) scan(text string) [][]int {
	out := make([][]int, len(s.ps))
	for i := 0; i < len(text); i++ {
		g := s.hit[text[i]]
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
				out[r.pattern] = append(out[r.pattern], st)
			}
		}
	}
	for i, starts := range out {
		if !slices.IsSorted(starts) {
			slices.Sort(starts)
		}
		out[i] = slices.Compact(starts)
	}
	return out
}

// rarest returns the offset of the byte of a that is least frequent in ordinary text.
func rarest(a string, fold bool) int {
	best, bestF := 0, 1<<30
	for i := 0; i < len(a); i++ {
		f := byteFreq(a[i])
		if fold {
			f = byteFreq(lowerByte(a[i])) + byteFreq(upper(a[i]))
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
	case '"', ',', '.', ':', '-', '_', '\n':
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
