package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
)

// noRank marks a byte string that is not a token.
const noRank = ^uint32(0)

// rankTable maps the byte strings of the tokens to their ranks (token ids) with open
// addressing and linear probing. The tokens' bytes are also stored once, concatenated in rank
// order.
type rankTable struct {
	slots []slot
	shift uint // 64 - log2(len(slots)): the home slot of a hash is hash>>shift
	mask  uint64
	// tokens[offsets[r]:offsets[r+1]] is the byte string of rank r.
	tokens  string
	offsets []uint32
	// pairs[b0<<8|b1] is the rank of the two-byte string b0 b1, or noRank.
	pairs []uint32
	// single[b] is the rank of the one-byte string b.
	single [256]uint32
}

// A slot holds a token's first 8 bytes, so that most lookups compare two words and touch no
// other memory. An empty slot is all zero.
type slot struct {
	head uint64 // the first 8 bytes, little-endian, zero-padded (see hashKey)
	meta uint64 // tag<<40 | len<<32 | rank, where tag is the low 24 bits of the hash
}

// maxTokenLen is the longest token a slot can describe.
const maxTokenLen = 255

// parseRanks reads a .tiktoken file: one token a line, its bytes in base64 (standard alphabet),
// a space and its rank. The ranks must be 0, 1, 2, ... in order (as in OpenAI's files), every
// single byte must be a token, and no byte string may appear twice.
func parseRanks(data []byte) (*rankTable, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	buf := make([]byte, 0, len(data)*3/4)
	offsets := make([]uint32, 1, n+1)
	for line := 1; len(data) > 0; line++ {
		var rank int
		var err error
		buf, rank, data, err = parseLine(buf, data)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if rank < 0 {
			continue // an empty line
		}
		if rank != len(offsets)-1 {
			return nil, fmt.Errorf("line %d: rank %d out of order", line, rank)
		}
		if m := len(buf) - int(offsets[len(offsets)-1]); m > maxTokenLen {
			return nil, fmt.Errorf("line %d: token of %d bytes", line, m)
		}
		offsets = append(offsets, uint32(len(buf)))
	}
	if len(offsets) < 257 {
		return nil, errors.New("too few tokens")
	}
	return newRankTable(string(buf), offsets)
}

// newRankTable builds the table of the tokens tokens[offsets[r]:offsets[r+1]], r = 0, 1, ...: the
// byte string of rank r. An empty byte string is no token (a rank left unused). Every single byte
// must be a token, no token may be longer than maxTokenLen, and no byte string may appear twice.
func newRankTable(tokens string, offsets []uint32) (*rankTable, error) {
	t := &rankTable{tokens: tokens, offsets: offsets}
	count := len(offsets) - 1
	size := 1 << bits.Len(uint(count*2-1)) // a power of two, at least twice the count
	t.slots = make([]slot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	t.mask = uint64(size - 1)
	t.pairs = make([]uint32, 1<<16)
	for i := range t.pairs {
		t.pairs[i] = noRank
	}
	for i := range t.single {
		t.single[i] = noRank
	}
	// Insert the tokens in the order of their home slots, so that the writes sweep the table
	// once instead of jumping about it (which would cost a cache miss per token). The order of
	// insertion only changes where in a run of occupied slots a token lands.
	type entry struct {
		slot
		home uint64
	}
	entries := make([]entry, count)
	// A counting sort by bucket, 4096 runs of consecutive slots: few enough for the sort's
	// counters and write positions to stay in cache, small enough for a bucket's slots too.
	bucketBits := max(bits.TrailingZeros(uint(size))-12, 0)
	starts := make([]uint32, size>>bucketBits+1)
	for r := range count {
		tok := t.token(uint32(r))
		if len(tok) == 0 {
			continue
		}
		if len(tok) > maxTokenLen {
			return nil, fmt.Errorf("token %d has %d bytes, over the %d a token may have", r, len(tok), maxTokenLen)
		}
		h, head := hashKey(tok)
		e := entry{slot{head, (h&0xffffff)<<40 | uint64(len(tok))<<32 | uint64(r)}, h >> t.shift}
		entries[r] = e
		starts[e.home>>bucketBits+1]++
		switch len(tok) {
		case 1:
			t.single[tok[0]] = uint32(r)
		case 2:
			t.pairs[int(tok[0])<<8|int(tok[1])] = uint32(r)
		}
	}
	for b := 1; b < len(starts); b++ {
		starts[b] += starts[b-1]
	}
	sorted := make([]entry, count)
	for _, e := range entries {
		if e.meta == 0 {
			continue // no token
		}
		b := e.home >> bucketBits
		sorted[starts[b]] = e
		starts[b]++
	}
	for _, e := range sorted {
		if e.meta == 0 {
			continue // the tail left by ranks without a token
		}
		i := e.home
		for ; t.slots[i].meta != 0; i = (i + 1) & t.mask {
			if sl := t.slots[i]; sl.head == e.head && sl.meta>>32 == e.meta>>32 &&
				t.token(uint32(sl.meta)) == t.token(uint32(e.meta)) {
				return nil, fmt.Errorf("token %q appears twice", t.token(uint32(e.meta)))
			}
		}
		t.slots[i] = e.slot
	}
	for b, r := range t.single {
		if r == noRank {
			return nil, fmt.Errorf("byte %#x is not a token", b)
		}
	}
	return t, nil
}

// parseLine parses the line at the start of data, "BASE64 RANK\n" (the newline is optional at
// the end of data), appends the token's bytes to buf and returns the rank and the rest of data.
// An empty line gives rank -1.
func parseLine(buf, data []byte) ([]byte, int, []byte, error) {
	if data[0] == '\n' {
		return buf, -1, data[1:], nil
	}
	// The token: quanta of 4 base64 characters up to the space, the last one maybe padded.
	i := 0
	for {
		if i+4 > len(data) {
			return buf, 0, nil, errors.New("bad line")
		}
		q := data[i : i+4 : i+4]
		a, b, c, d := base64Values[q[0]], base64Values[q[1]], base64Values[q[2]], base64Values[q[3]]
		i += 4
		if (a|b|c|d)&0xc0 == 0 {
			v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
			buf = append(buf, byte(v>>16), byte(v>>8), byte(v))
			if i < len(data) && data[i] == ' ' {
				break
			}
			continue
		}
		// Padding, which must end the token, and must follow zero bits.
		switch {
		case (a|b)&0xc0 == 0 && q[2] == '=' && q[3] == '=' && b&0x0f == 0:
			buf = append(buf, a<<2|b>>4)
		case (a|b|c)&0xc0 == 0 && q[3] == '=' && c&0x03 == 0:
			buf = append(buf, a<<2|b>>4, b<<4|c>>2)
		default:
			return buf, 0, nil, fmt.Errorf("bad base64 %q", q)
		}
		if i >= len(data) || data[i] != ' ' {
			return buf, 0, nil, errors.New("bad line")
		}
		break
	}
	// The rank: decimal digits up to the newline or the end.
	i++
	rank, digits := 0, 0
	for ; i < len(data) && data[i] != '\n'; i++ {
		c := data[i]
		if c < '0' || c > '9' || digits == 9 {
			return buf, 0, nil, fmt.Errorf("bad rank")
		}
		rank = rank*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return buf, 0, nil, fmt.Errorf("no rank")
	}
	if i < len(data) {
		i++ // the newline
	}
	return buf, rank, data[i:], nil
}

// token returns the byte string of rank r.
func (t *rankTable) token(r uint32) string {
	return t.tokens[t.offsets[r]:t.offsets[r+1]]
}

// lookup returns the rank of b, whose hashKey is h, head.
func (t *rankTable) lookup(b string, h, head uint64) (uint32, bool) {
	want := (h&0xffffff)<<8 | uint64(len(b))
	for i := h >> t.shift; ; i = (i + 1) & t.mask {
		sl := t.slots[i]
		if sl.meta == 0 {
			return noRank, false
		}
		if sl.head == head && sl.meta>>32 == want {
			r := uint32(sl.meta)
			if len(b) <= 8 || t.tokens[t.offsets[r]+8:t.offsets[r+1]] == b[8:] {
				return r, true
			}
		}
	}
}

// rank returns the rank of b, or noRank.
func (t *rankTable) rank(b string) uint32 {
	switch len(b) {
	case 1:
		return t.single[b[0]]
	case 2:
		return t.pairs[int(b[0])<<8|int(b[1])]
	}
	h, head := hashKey(b)
	r, _ := t.lookup(b, h, head)
	return r
}

const (
	hashK0 = 0xa0761d6478bd642f
	hashK1 = 0xe7037ed1a0b428db
	hashK2 = 0x8ebc6af09c88c6e3
)

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hashKey returns a hash of s (after wyhash) and head, the first 8 bytes of s as a
// little-endian word, zero-padded. The hash needs no per-process seed: the table it indexes is
// fixed, so no input can make it grow or degrade.
func hashKey(s string) (h, head uint64) {
	n := len(s)
	head = headOf(s)
	var tail uint64
	if n > 8 {
		rest := s[8:]
		for len(rest) > 8 {
			tail = mix(le64(rest)^hashK1, tail^hashK2)
			rest = rest[8:]
		}
		// The last 1 to 8 bytes, read as the 8 bytes ending the string.
		tail ^= le64(s[n-8:]) >> (8 * (8 - len(rest)))
	}
	return mix(head^hashK0, tail^uint64(n)^hashK1), head
}

// headOf returns the first 8 bytes of s as a little-endian word, zero-padded.
func headOf(s string) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		return le64(s)
	case n >= 4:
		return uint64(le32(s)) | uint64(le32(s[n-4:])>>(8*(8-n)))<<32
	case n > 0:
		return uint64(s[0]) | uint64(s[n>>1])<<(8*(n>>1)) | uint64(s[n-1])<<(8*(n-1))
	}
	return 0
}

// base64Values maps the characters of the standard base64 alphabet to their values; any other
// byte maps to 0xff.
var base64Values = func() (v [256]uint8) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range v {
		v[i] = 0xff
	}
	for i := range len(alphabet) {
		v[alphabet[i]] = uint8(i)
	}
	return v
}()

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
