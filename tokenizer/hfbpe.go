package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// hfModel is the BPE model of a tokenizer.json, over bytes: each token of the vocabulary is
// stored as the bytes its byte-level characters stand for.
type hfModel struct {
	ranks        *rankTable // the tokens' bytes to their ids (ranks is the id)
	merges       mergeTable
	ignoreMerges bool
	// self[id] says whether the merges make token id's bytes into token id (selfYes), into
	// other tokens (selfNo), or is not known yet; read and written atomically.
	self []uint32
}

// The values of hfModel.self.
const (
	selfUnknown = iota
	selfYes
	selfNo
)

// byteLevelRunes maps the characters of the byte-level alphabet to the bytes they stand for
// (GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the others are shifted
// to U+0100 and up, in order); noByte for any other character.
var byteLevelRunes = func() (m [0x144]uint16) {
	for i := range m {
		m[i] = noByte
	}
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			m[b] = uint16(b)
		} else {
			m[0x100+n] = uint16(b)
			n++
		}
	}
	return m
}()

const noByte = 0xffff

// byteLevelDecode appends the bytes the byte-level characters of s stand for to buf; ok is
// false when s has a character outside the alphabet (a token no text can produce).
func byteLevelDecode(buf []byte, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(s[i:])
		}
		i += w
		if r >= rune(len(byteLevelRunes)) || byteLevelRunes[r] == noByte {
			return buf, false
		}
		buf = append(buf, byte(byteLevelRunes[r]))
	}
	return buf, true
}

// parseBPE reads the model's vocab (an object of tokens to ids) and merges (an array of "a b"
// strings or of [a, b] pairs; the first has the highest priority).
func parseBPE(vocab, merges json.RawMessage, ignoreMerges bool) (*hfModel, error) {
	if vocab == nil {
		return nil, errors.New("model.vocab: missing")
	}
	if merges == nil {
		return nil, errors.New("model.merges: missing")
	}
	ranks, err := readVocab(vocab)
	if err != nil {
		return nil, err
	}
	m := &hfModel{ranks: ranks, ignoreMerges: ignoreMerges}
	if !ignoreMerges {
		m.self = make([]uint32, len(ranks.offsets)-1)
	}
	if err := m.readMerges(merges); err != nil {
		return nil, err
	}
	return m, nil
}

// readVocab reads the vocab object into a rank table of the tokens' bytes (the rank is the id).
// Tokens with a character outside the byte-level alphabet are left out: no text produces them.
func readVocab(raw json.RawMessage) (*rankTable, error) {
	type entry struct{ start, end, id uint32 }
	var (
		entries []entry
		buf     []byte // the tokens' bytes, in the order of the file
		maxID   = -1
	)
	r := jsonReader{data: raw}
	if !r.open('{') {
		return nil, errors.New("model.vocab: not an object")
	}
	for i := 0; r.more('}', i); i++ {
		key, err := r.rawStr()
		if err != nil {
			return nil, fmt.Errorf("model.vocab: entry %d: %v", i+1, err)
		}
		if !r.open(':') {
			return nil, fmt.Errorf("model.vocab: entry %d (%q): want ':'", i+1, key)
		}
		id, err := r.int()
		if err != nil || id < 0 || id >= 1<<30 {
			return nil, fmt.Errorf("model.vocab: token %q: the id is not a number from 0 to 2^30", key)
		}
		start := len(buf)
		var ok bool
		if buf, ok = byteLevelDecode(buf, key); !ok || len(buf) == start {
			buf = buf[:start]
			continue
		}
		entries = append(entries, entry{uint32(start), uint32(len(buf)), uint32(id)})
		maxID = max(maxID, id)
	}
	if r.err != nil {
		return nil, fmt.Errorf("model.vocab: %v", r.err)
	}
	if maxID < 0 {
		return nil, errors.New("model.vocab: no token of the byte-level alphabet")
	}
	// The tokens in id order, an empty string for an id without a token.
	byID := make([]int32, maxID+1)
	for i := range byID {
		byID[i] = -1
	}
	for i, e := range entries {
		if byID[e.id] >= 0 {
			return nil, fmt.Errorf("model.vocab: id %d is given to two tokens", e.id)
		}
		byID[e.id] = int32(i)
	}
	all := make([]byte, 0, len(buf))
	offsets := make([]uint32, 1, len(byID)+1)
	var haveByte [256]bool
	for _, i := range byID {
		if i >= 0 {
			tok := buf[entries[i].start:entries[i].end]
			all = append(all, tok...)
			if len(tok) == 1 {
				haveByte[tok[0]] = true
			}
		}
		offsets = append(offsets, uint32(len(all)))
	}
	for b := range 256 {
		if !haveByte[b] {
			r := rune(b)
			for i, v := range byteLevelRunes {
				if v == uint16(b) {
					r = rune(i)
				}
			}
			return nil, fmt.Errorf("model.vocab: the byte 0x%02x (%q) is not a token: a byte-level vocabulary has every byte", b, r)
		}
	}
	ranks, err := newRankTable(string(all), offsets)
	if err != nil {
		return nil, fmt.Errorf("model.vocab: %v", err)
	}
	return ranks, nil
}

// readMerges reads the merges into the merge table.
func (m *hfModel) readMerges(raw json.RawMessage) error {
	r := jsonReader{data: raw}
	if !r.open('[') {
		return errors.New("model.merges: not an array")
	}
	var list []mergeSlot
	var buf []byte // the bytes of a, then of b
	for n := 1; r.more(']', n-1); n++ {
		var a, b []byte
		var err error
		if r.peek() == '[' {
			r.open('[')
			if a, err = r.rawStr(); err == nil && r.open(',') {
				b, err = r.rawStr()
			} else if err == nil {
				err = errors.New("want two tokens")
			}
			if err == nil && !r.open(']') {
				err = errors.New("want two tokens")
			}
		} else {
			var s []byte
			if s, err = r.rawStr(); err == nil {
				if i := bytes.IndexByte(s, ' '); i > 0 && i < len(s)-1 && bytes.IndexByte(s[i+1:], ' ') < 0 {
					a, b = s[:i], s[i+1:]
				} else {
					err = fmt.Errorf("%q: want two tokens separated by one space", s)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("model.merges: merge %d: %v", n, err)
		}
		var okA, okB bool
		buf, okA = byteLevelDecode(buf[:0], a)
		k := len(buf)
		buf, okB = byteLevelDecode(buf, b)
		if !okA || !okB || k == 0 || k == len(buf) {
			continue // a token no text produces: the merge never applies
		}
		ia, ib, id := m.ranks.rank(bytesString(buf[:k])), m.ranks.rank(bytesString(buf[k:])), m.ranks.rank(bytesString(buf))
		switch {
		case ia == noRank:
			return fmt.Errorf("model.merges: merge %d: %q is not in the vocabulary", n, a)
		case ib == noRank:
			return fmt.Errorf("model.merges: merge %d: %q is not in the vocabulary", n, b)
		case id == noRank:
			return fmt.Errorf("model.merges: merge %d: %q is not in the vocabulary", n, string(a)+string(b))
		}
		list = append(list, mergeSlot{uint64(ia)<<32 | uint64(ib), uint64(n-1)<<32 | uint64(id)})
	}
	if r.err != nil {
		return fmt.Errorf("model.merges: %v", r.err)
	}
	m.merges = newMergeTable(list)
	return nil
}

// bytesString returns b as a string without copying it, for a lookup that does not keep it.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// mergeTable maps a pair of token ids to the merge's priority (its index in merges) and the
// id of the merged token, by open addressing.
type mergeTable struct {
	slots []mergeSlot
	mask  uint64
	shift uint // 64 - log2(len(slots)): the home slot of a hash is hash>>shift
}

type mergeSlot struct {
	key uint64 // a<<32 | b, or emptyMerge
	val uint64 // priority<<32 | id
}

const emptyMerge = ^uint64(0)

// newMergeTable builds the table of merges, each a key a<<32|b and a value priority<<32|id. A
// later merge of the same pair replaces an earlier one, as in the reference.
func newMergeTable(merges []mergeSlot) mergeTable {
	n := len(merges)
	size := 1 << bits.Len(uint(max(n, 4)+n/2)) // a power of two, over 1.5 times n
	shift := uint(64 - bits.TrailingZeros(uint(size)))
	t := mergeTable{slots: make([]mergeSlot, size), mask: uint64(size - 1), shift: shift}
	for i := range t.slots {
		t.slots[i].key = emptyMerge
	}
	// Insert in the order of the home slots, as newRankTable does, so that the writes sweep the
	// table once; the counting sort is stable, so the merges of one pair stay in their order.
	bucketBits := max(bits.TrailingZeros(uint(size))-12, 0)
	starts := make([]uint32, size>>bucketBits+1)
	for _, m := range merges {
		starts[(mergeHash(m.key)>>shift)>>bucketBits+1]++
	}
	for b := 1; b < len(starts); b++ {
		starts[b] += starts[b-1]
	}
	sorted := make([]mergeSlot, n)
	for _, m := range merges {
		b := (mergeHash(m.key) >> shift) >> bucketBits
		sorted[starts[b]] = m
		starts[b]++
	}
	for _, m := range sorted {
		t.put(m.key, m.val)
	}
	return t
}

// mergeHash returns the hash of a merge's key; its top bits choose the home slot.
func mergeHash(k uint64) uint64 { return mix(k^hashK0, hashK1) }

func (t *mergeTable) put(k, v uint64) {
	for i := mergeHash(k) >> t.shift; ; i = (i + 1) & t.mask {
		if s := &t.slots[i]; s.key == k || s.key == emptyMerge {
			s.key, s.val = k, v
			return
		}
	}
}

// get returns the priority of the merge of a and b and the merged token, or ok false when
// there is no such merge.
func (t *mergeTable) get(a, b uint32) (prio, id uint32, ok bool) {
	if t.slots == nil {
		return noRank, noRank, false
	}
	k := uint64(a)<<32 | uint64(b)
	for i := mergeHash(k) >> t.shift; ; i = (i + 1) & t.mask {
		switch s := t.slots[i]; s.key {
		case k:
			return uint32(s.val >> 32), uint32(s.val), true
		case emptyMerge:
			return noRank, noRank, false
		}
	}
}

// mergeLinear appends the tokens of piece (3 <= len(piece) <= maxLinear) to out, merging as
// the reference's BPE does: repeatedly the adjacent pair of parts whose merge comes first in
// merges, the leftmost of equals, until no adjacent pair has a merge.
func (m *hfModel) mergeLinear(piece string, out []uint32) []uint32 {
	var (
		// Part i is token toks[i]; prio[i] and next[i] are the priority and result of the
		// merge of parts i and i+1 (noRank when there is none).
		toks [maxLinear]uint32
		prio [maxLinear]uint32
		next [maxLinear]uint32
	)
	n := len(piece)
	for i := range n {
		toks[i] = m.ranks.single[piece[i]]
	}
	for i := 0; i < n-1; i++ {
		prio[i], next[i], _ = m.merges.get(toks[i], toks[i+1])
	}
	prio[n-1] = noRank
	for n > 1 {
		best, bi := noRank, -1
		for i, r := range prio[:n-1] {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		toks[bi] = next[bi]
		copy(toks[bi+1:n-1], toks[bi+2:n])
		copy(prio[bi+1:n-1], prio[bi+2:n])
		copy(next[bi+1:n-1], next[bi+2:n])
		n--
		if bi+1 < n {
			prio[bi], next[bi], _ = m.merges.get(toks[bi], toks[bi+1])
		} else {
			prio[bi] = noRank
		}
		if bi > 0 {
			prio[bi-1], next[bi-1], _ = m.merges.get(toks[bi-1], toks[bi])
		}
	}
	return append(out, toks[:n]...)
}

// mergeHeap is mergeLinear for pieces of any length, in O(n log n): the candidate merges are
// kept in a heap ordered by (priority, start), which picks the same merge as mergeLinear.
// Entries made stale by a merge are skipped when popped.
func (m *hfModel) mergeHeap(piece string, out []uint32) []uint32 {
	n := len(piece)
	next := make([]int32, n)
	prev := make([]int32, n)
	toks := make([]uint32, n)
	pairPrio := make([]uint32, n)
	pairID := make([]uint32, n)
	h := make(pairHeap, 0, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
		toks[i] = m.ranks.single[piece[i]]
		pairPrio[i] = noRank
	}
	for i := 0; i+1 < n; i++ {
		if p, id, ok := m.merges.get(toks[i], toks[i+1]); ok {
			pairPrio[i], pairID[i] = p, id
			h = append(h, pairEntry{p, int32(i)})
		}
	}
	h.init()
	for len(h) > 0 {
		e := h.pop()
		a := e.start
		if pairPrio[a] != e.rank {
			continue // stale: part a was merged away or its right neighbour changed
		}
		b := next[a]
		toks[a] = pairID[a]
		next[a] = next[b]
		if next[b] < int32(n) {
			prev[next[b]] = a
		}
		pairPrio[b] = noRank
		pairPrio[a] = noRank
		if next[a] < int32(n) {
			if p, id, ok := m.merges.get(toks[a], toks[next[a]]); ok {
				pairPrio[a], pairID[a] = p, id
				h.push(pairEntry{p, a})
			}
		}
		if p := prev[a]; p >= 0 {
			pairPrio[p] = noRank
			if q, id, ok := m.merges.get(toks[p], toks[a]); ok {
				pairPrio[p], pairID[p] = q, id
				h.push(pairEntry{q, p})
			}
		}
	}
	for i := int32(0); i < int32(n); i = next[i] {
		out = append(out, toks[i])
	}
	return out
}

// jsonReader reads the vocab and merges of a tokenizer.json, which encoding/json has already
// checked to be valid JSON: objects of strings to integers and arrays of strings or of pairs
// of strings.
type jsonReader struct {
	data []byte
	pos  int
	err  error
}

func (r *jsonReader) skip() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\r', '\n':
			r.pos++
		default:
			return
		}
	}
}

func (r *jsonReader) peek() byte {
	r.skip()
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// open consumes c if it comes next.
func (r *jsonReader) open(c byte) bool {
	if r.peek() == c {
		r.pos++
		return true
	}
	return false
}

// more reports whether the object or array goes on before its closing byte, consuming the
// comma between entries (i is the number of entries read); it consumes the closing byte at the
// end.
func (r *jsonReader) more(end byte, i int) bool {
	if r.err != nil {
		return false
	}
	switch c := r.peek(); {
	case c == end:
		r.pos++
		return false
	case c == 0:
		r.err = errors.New("unexpected end")
		return false
	case i == 0:
		return true
	case c == ',':
		r.pos++
		return true
	default:
		r.err = fmt.Errorf("want ',' or %q after entry %d, not %q", end, i, c)
		return false
	}
}

// rawStr reads a string and returns its bytes: the file's own bytes when it has no escape
// (the caller must not keep them), its decoded value otherwise. Invalid UTF-8 is read as
// encoding/json reads it (each bad byte is U+FFFD).
func (r *jsonReader) rawStr() ([]byte, error) {
	if r.peek() != '"' {
		return nil, errors.New("want a string")
	}
	start := r.pos
	r.pos++
	escaped := false
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case '\\':
			escaped = true
			r.pos += 2
			continue
		case '"':
			r.pos++
			lit := r.data[start:r.pos]
			if !escaped && utf8.Valid(lit) {
				return lit[1 : len(lit)-1], nil
			}
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		}
		r.pos++
	}
	return nil, errors.New("unterminated string")
}

// skipStr reads a string without decoding it.
func (r *jsonReader) skipStr() error {
	r.pos++ // the opening quote
	for {
		i := bytes.IndexAny(r.data[r.pos:], "\"\\")
		if i < 0 {
			return errors.New("unterminated string")
		}
		r.pos += i
		if r.data[r.pos] == '"' {
			r.pos++
			return nil
		}
		r.pos += 2 // an escape and the byte it escapes
	}
}

// skipValue reads any value and returns its bytes.
func (r *jsonReader) skipValue() ([]byte, error) {
	r.skip()
	start, depth := r.pos, 0
	for r.pos < len(r.data) {
		switch c := r.data[r.pos]; c {
		case '"':
			if err := r.skipStr(); err != nil {
				return nil, err
			}
			if depth == 0 {
				return r.data[start:r.pos], nil
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				if r.pos == start {
					return nil, fmt.Errorf("unexpected %q", c)
				}
				return r.data[start:r.pos], nil
			}
			depth--
			if depth == 0 {
				r.pos++
				return r.data[start:r.pos], nil
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				if r.pos == start {
					return nil, fmt.Errorf("unexpected %q", c)
				}
				return r.data[start:r.pos], nil
			}
		}
		r.pos++
	}
	if depth > 0 || r.pos == start {
		return nil, errors.New("unexpected end")
	}
	return r.data[start:r.pos], nil
}

// readObject reads a JSON object into its keys' values. prefix starts the place errors name.
func readObject(data []byte, prefix string) (map[string]json.RawMessage, error) {
	r := jsonReader{data: data}
	if !r.open('{') {
		return nil, fmt.Errorf("%snot a JSON object", prefix)
	}
	out := map[string]json.RawMessage{}
	for i := 0; r.more('}', i); i++ {
		key, err := r.rawStr()
		if err != nil {
			return nil, placeError(prefix, err)
		}
		if !r.open(':') {
			return nil, fmt.Errorf("%s%s: want ':'", prefix, key)
		}
		v, err := r.skipValue()
		if err != nil {
			return nil, fmt.Errorf("%s%s: %v", prefix, key, err)
		}
		out[string(key)] = v
	}
	if r.err != nil {
		return nil, placeError(prefix, r.err)
	}
	if r.peek() != 0 {
		return nil, placeError(prefix, errors.New("data after the object"))
	}
	return out, nil
}

// placeError prefixes err with the place prefix names ("model." is model), if any.
func placeError(prefix string, err error) error {
	if prefix == "" {
		return err
	}
	return fmt.Errorf("%s: %w", strings.TrimSuffix(prefix, "."), err)
}

// int reads an integer.
func (r *jsonReader) int() (int, error) {
	r.skip()
	start := r.pos
	for r.pos < len(r.data) && (r.data[r.pos] >= '0' && r.data[r.pos] <= '9' || r.data[r.pos] == '-') {
		r.pos++
	}
	return strconv.Atoi(string(r.data[start:r.pos]))
}
