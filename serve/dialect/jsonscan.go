package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"unicode/utf8"
)

// A request is read in one pass over its body: the scanner below checks that the body is one
// JSON object and records where each of its members is, and where each element of its
// conversation array is (messages, or input), without decoding them. Only the values the
// proxy reads (the model, stream, tools, and the messages it has not seen yet) are decoded
// after that.

// Member is a member of the request's object: its key, decoded, and its value as sent.
type Member struct {
	Key string
	Val []byte
}

// maxJSONDepth bounds the nesting of a request's values, as encoding/json does.
const maxJSONDepth = 10000

// jsonError is a body that is not valid JSON, with the offset where it stops being so.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// ScanObject checks that body is one JSON object and returns its members in order (a key that
// comes again replaces the earlier value in place, as encoding/json keeps the last) and, when
// the member arrayKey is an array, its elements.
func ScanObject(body []byte, arrayKey string) (members []Member, elems [][]byte, err error) {
	sc, _, err := ScanObjectAfter(body, arrayKey, nil)
	if err != nil {
		return nil, nil, err
	}
	return sc.Members, sc.Elems, nil
}

// Scanned is a body scanned by ScanObjectAfter, kept so that the next request of the same
// conversation (an agent resends its whole history each turn) is scanned only from where it
// stops sharing this one's bytes.
type Scanned struct {
	Body    []byte
	Members []Member
	Elems   [][]byte

	key     string
	all     []span // the members, as offsets, parallel to Members
	spans   []span // the members before the array member
	arrayAt int    // the offset of the array member's value ('['); -1: none
	starts  []int  // the offset of each element, and just after it
	ends    []int
	dup     bool // a key came twice: no later scan resumes from this one
	// prefix[k] identifies the body up to the end of element k (Body[:ends[k]]): the hashes
	// of its elements' bytes chained (see chain), so that a later scan finds where it stops
	// sharing this body without the body (see Kept).
	prefix []Hash
	// vals are the hashes of the values of the members in all (none for the array's).
	vals []Hash
	// segs, in a kept scan, cut the body up to the end of its last element in pieces, each
	// ending at the end of an element, with the hash of each piece's bytes: a request that
	// starts with all of it is found so by hashing its bytes once (most do), and the next kept
	// scan adds a piece for what it adds, its bytes hashed once too (see Kept).
	segs []segment
	// grow, shared by the scan's copies (Kept), is taken by the one later scan that resumes
	// after all of its elements and extends starts, ends and prefix in place (resumeOffsets).
	grow *atomic.Bool
}

// segment is a piece of a kept scan's body: it ends at end (the end of an element) and
// starts where the one before it ends (0 for the first); h is the hash of its bytes.
type segment struct {
	end int
	h   Hash
}

// maxSegs bounds the pieces of a kept scan: one more, and Kept hashes its body up to the end
// of its last element as one piece (once every maxSegs turns of a conversation).
const maxSegs = 64

// chain is the hash of the bytes h identifies followed by b.
func chain(h Hash, b []byte) Hash {
	var out Hash
	for i := range out {
		var m maphash.Hash
		m.SetSeed(hashSeeds[i])
		var hb [8]byte
		for k := range hb {
			hb[k] = byte(h[i] >> (8 * k))
		}
		m.Write(hb[:])
		m.Write(b)
		out[i] = m.Sum64()
	}
	return out
}

// Kept is the scan as kept for the next request: what a later scan resumes from (the offsets
// and hashes), without the body's bytes (Body, Members and Elems are nil).
func (sc *Scanned) Kept() *Scanned {
	if sc == nil {
		return nil
	}
	k := *sc
	if n := len(sc.ends); n > 0 && sc.Body != nil {
		// The pieces the scan resumed from (their bytes hashed already) and one for the rest.
		from := 0
		if len(k.segs) > 0 {
			from = k.segs[len(k.segs)-1].end
		}
		if len(k.segs) >= maxSegs {
			k.segs, from = nil, 0
		}
		if end := sc.ends[n-1]; end > from {
			k.segs = append(slices.Clip(k.segs), segment{end, HashBytes(sc.Body[from:end])})
		}
	}
	k.Body, k.Members, k.Elems = nil, nil, nil
	return &k
}

// MemberHash is the hash of the value of the object's member key (HashBytes), false when the
// object has none or it is the array member.
func (sc *Scanned) MemberHash(key string) (Hash, bool) {
	for i, sp := range sc.all {
		if sp.key == key && i < len(sc.vals) && key != sc.key {
			return sc.vals[i], true
		}
	}
	return Hash{}, false
}

// Bytes estimates the memory the scan holds: its body and the slices of its members and
// elements, when it has them, and its offsets and hashes with the room past them (which the
// next scan resumed after all of its elements fills in place: resumeOffsets).
func (sc *Scanned) Bytes() int64 {
	return int64(len(sc.Body)) + int64(len(sc.Elems))*24 + int64(cap(sc.starts))*8 + int64(cap(sc.ends))*8 + int64(cap(sc.prefix))*16 +
		int64(cap(sc.all))*64 + int64(cap(sc.segs))*24
}

type span struct {
	key        string
	start, end int
}

// ScanObjectAfter is ScanObject, skipping what body shares with prev, a scan of the same
// arrayKey (nil: none): when body starts with the same bytes as prev.Body up to the end of
// element k of its array, the members before the array and its first k+1 elements are prev's
// (the bytes are the same, so is their meaning) and only the rest is read, the check that body
// is valid UTF-8 and JSON included. shared is the number of elements taken from prev.
func ScanObjectAfter(body []byte, arrayKey string, prev *Scanned) (sc *Scanned, shared int, err error) {
	sc = &Scanned{Body: body, key: arrayKey, arrayAt: -1, grow: new(atomic.Bool)}
	s := scanner{b: body}
	if k := resumable(body, arrayKey, prev); k >= 0 {
		if !utf8.Valid(body[prev.ends[k]:]) {
			return nil, 0, errNotUTF8
		}
		sc.spans, sc.all = prev.spans, slices.Clone(prev.spans)
		sc.vals = slices.Clone(prev.vals[:len(prev.spans)])
		for _, sp := range prev.spans {
			sc.Members = append(sc.Members, Member{Key: sp.key, Val: body[sp.start:sp.end]})
		}
		sc.arrayAt = prev.arrayAt
		sc.starts, sc.ends, sc.prefix = prev.resumeOffsets(k + 1)
		// The pieces of prev's body that body holds: their bytes were compared (resumable).
		for _, sg := range prev.segs {
			if sg.end > prev.ends[k] {
				break
			}
			sc.segs = append(sc.segs, sg)
		}
		sc.Elems = make([][]byte, k+1, k+1+(len(body)-prev.ends[k])/256+4)
		for e := range k + 1 {
			sc.Elems[e] = body[sc.starts[e]:sc.ends[e]]
		}
		s.i = prev.ends[k]
		if err := s.arrayRest(1, sc); err != nil {
			return nil, 0, err
		}
		sc.addMember(arrayKey, sc.arrayAt, s.i)
		if err := s.membersAfter(arrayKey, sc); err != nil {
			return nil, 0, err
		}
		return sc, k + 1, nil
	}
	if !utf8.Valid(body) {
		return nil, 0, errNotUTF8
	}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, 0, s.fail("want a JSON object")
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
		s.space()
		if s.i != len(s.b) {
			return nil, 0, s.fail("data after the object")
		}
		return sc, 0, nil
	}
	return sc, 0, s.membersFrom(arrayKey, sc)
}

// resumeOffsets returns the offsets and prefix hashes of the scan's first n elements, for a
// scan that resumes after them and appends its own: the scan's own arrays when n is all of its
// elements and no other scan took them (the first to resume after all of them extends them in
// place, when they have room: what a request resends is not copied), else copies with room
// for a quarter more.
func (sc *Scanned) resumeOffsets(n int) (starts, ends []int, prefix []Hash) {
	if n == len(sc.starts) && n == len(sc.ends) && n == len(sc.prefix) && n < min(cap(sc.starts), cap(sc.ends), cap(sc.prefix)) &&
		sc.grow != nil && sc.grow.CompareAndSwap(false, true) {
		return sc.starts, sc.ends, sc.prefix
	}
	size := n + n/4 + 16
	starts, ends, prefix = make([]int, n, size), make([]int, n, size), make([]Hash, n, size)
	copy(starts, sc.starts[:n])
	copy(ends, sc.ends[:n])
	copy(prefix, sc.prefix[:n])
	return starts, ends, prefix
}

// errNotUTF8 is a body that is not valid UTF-8.
var errNotUTF8 = errors.New("not valid UTF-8")

// ErrNotUTF8 is the error of a scan of a body that is not valid UTF-8.
var ErrNotUTF8 = errNotUTF8

// resumable returns the last element of prev's array that body holds with the same bytes up to
// its end, or -1 when a scan of body cannot start from prev. The byte after it (',' or ']') is
// read again. With prev's body at hand the bytes are compared, else their hashes (prev.prefix).
func resumable(body []byte, arrayKey string, prev *Scanned) int {
	if prev == nil || prev.key != arrayKey || prev.dup || prev.arrayAt < 0 || len(prev.ends) == 0 ||
		len(prev.prefix) != len(prev.ends) || len(prev.vals) < len(prev.spans) {
		return -1
	}
	if prev.Body != nil {
		n := commonPrefix(body, prev.Body)
		// The last element that ends within the shared bytes.
		k, _ := slices.BinarySearch(prev.ends, n+1)
		return k - 1
	}
	// The pieces of prev's body that body holds, then its elements one by one.
	from := 0
	for _, sg := range prev.segs {
		if sg.end > len(body) || HashBytes(body[from:sg.end]) != sg.h {
			break
		}
		from = sg.end
	}
	k, h := -1, Hash{}
	if from > 0 {
		i, ok := slices.BinarySearch(prev.ends, from)
		if !ok {
			return -1 // a piece ends at an element's end: not a kept scan's pieces
		}
		k, h = i, prev.prefix[i]
	}
	for j := k + 1; j < len(prev.ends); j++ {
		end := prev.ends[j]
		if end > len(body) {
			break
		}
		if h = chain(h, body[from:end]); h != prev.prefix[j] {
			break
		}
		k, from = j, end
	}
	return k
}

// commonPrefix is the length of the longest common prefix of a and b, compared a block at a
// time (bytes.Equal runs at memory speed).
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	const block = 64 << 10
	i := 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// addMember records member key with its value at body[start:end] (a key that comes again
// replaces the earlier one in place).
func (sc *Scanned) addMember(key string, start, end int) {
	m := Member{Key: key, Val: sc.Body[start:end]}
	var h Hash
	if key != sc.key {
		h = HashBytes(m.Val)
	}
	for j := range sc.Members {
		if sc.Members[j].Key == key {
			sc.Members[j], sc.all[j], sc.vals[j], sc.dup = m, span{key, start, end}, h, true
			return
		}
	}
	sc.Members = append(sc.Members, m)
	sc.all = append(sc.all, span{key, start, end})
	sc.vals = append(sc.vals, h)
}

// membersFrom reads the object's members from s.i (at a member name) to its end.
func (s *scanner) membersFrom(arrayKey string, sc *Scanned) error {
	for {
		s.space()
		start := s.i
		if s.peek() != '"' {
			return s.fail("want a member name")
		}
		escaped, err := s.str()
		if err != nil {
			return err
		}
		key := string(s.b[start+1 : s.i-1])
		if escaped {
			if json.Unmarshal(s.b[start:s.i], &key) != nil {
				return s.fail("bad member name")
			}
		}
		s.space()
		if s.peek() != ':' {
			return s.fail("want ':'")
		}
		s.i++
		s.space()
		vstart := s.i
		if key == arrayKey {
			if sc.arrayAt >= 0 {
				sc.dup = true // the array member again: the last one counts, and no scan resumes
			}
			sc.Elems, sc.starts, sc.ends, sc.prefix, sc.arrayAt = nil, nil, nil, nil, -1
		}
		if key == arrayKey && s.peek() == '[' {
			sc.arrayAt = vstart
			sc.spans = slices.Clone(sc.all)
			s.i++ // [
			if err := s.arrayRest(1, sc); err != nil {
				return err
			}
		} else if err := s.value(1); err != nil {
			return err
		}
		sc.addMember(key, vstart, s.i)
		if key == arrayKey {
			return s.membersAfter(arrayKey, sc)
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.end()
		default:
			return s.fail("want ',' or '}'")
		}
	}
}

// membersAfter reads what follows the array member's value: more members, or the object's end.
func (s *scanner) membersAfter(arrayKey string, sc *Scanned) error {
	s.space()
	switch s.peek() {
	case ',':
		s.i++
		return s.membersFrom(arrayKey, sc)
	case '}':
		s.i++
		return s.end()
	}
	return s.fail("want ',' or '}'")
}

// end checks that nothing but white space follows the object.
func (s *scanner) end() error {
	s.space()
	if s.i != len(s.b) {
		return s.fail("data after the object")
	}
	return nil
}

// arrayRest reads the kept array's elements from s.i, which is just after its '[' or just
// after one of its elements, to its ']', recording each element.
func (s *scanner) arrayRest(depth int, sc *Scanned) error {
	s.space()
	if len(sc.ends) == 0 && s.peek() == ']' {
		s.i++
		return nil
	}
	if len(sc.ends) > 0 {
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("want ',' or ']'")
		}
	}
	for {
		s.space()
		start := s.i
		if err := s.value(depth); err != nil {
			return err
		}
		sc.Elems = append(sc.Elems, s.b[start:s.i])
		from, h := 0, Hash{}
		if n := len(sc.ends); n > 0 {
			from, h = sc.ends[n-1], sc.prefix[n-1]
		}
		sc.prefix = append(sc.prefix, chain(h, s.b[from:s.i]))
		sc.starts, sc.ends = append(sc.starts, start), append(sc.ends, s.i)
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("want ',' or ']'")
		}
	}
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(msg string) error {
	if s.i >= len(s.b) {
		return &jsonError{off: s.i, msg: "unexpected end of JSON (" + msg + ")"}
	}
	return &jsonError{off: s.i, msg: msg}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks one value at s.i, nested depth deep.
func (s *scanner) value(depth int) error {
	if depth > maxJSONDepth {
		return s.fail("JSON nested too deep")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		_, err := s.array(depth+1, false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return s.fail("want a JSON value")
}

func (s *scanner) object(depth int) error {
	s.i++ // {
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.peek() != '"' {
			return s.fail("want a member name")
		}
		if _, err := s.str(); err != nil {
			return err
		}
		s.space()
		if s.peek() != ':' {
			return s.fail("want ':'")
		}
		s.i++
		s.space()
		if err := s.value(depth); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("want ',' or '}'")
		}
	}
}

// array checks an array; with keep, it returns its elements.
func (s *scanner) array(depth int, keep bool) ([][]byte, error) {
	s.i++ // [
	var elems [][]byte
	s.space()
	if s.peek() == ']' {
		s.i++
		return elems, nil
	}
	for {
		s.space()
		start := s.i
		if err := s.value(depth); err != nil {
			return nil, err
		}
		if keep {
			elems = append(elems, s.b[start:s.i])
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return elems, nil
		default:
			return nil, s.fail("want ',' or ']'")
		}
	}
}

// str checks a string (the body is valid UTF-8: the caller checked) and reports whether it
// holds an escape.
func (s *scanner) str() (escaped bool, err error) {
	s.i++ // "
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for k := 0; k < 4; k++ {
					if !isHex(s.peek()) {
						return false, s.fail("bad \\u escape in a string")
					}
					s.i++
				}
			default:
				return false, s.fail("bad escape in a string")
			}
		case c < 0x20:
			return false, s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *scanner) number() error {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.fail("bad number")
	}
	if s.peek() == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("bad number")
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("bad number")
		}
	}
	return nil
}

func (s *scanner) word(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return s.fail("want a JSON value")
	}
	s.i += len(w)
	return nil
}
