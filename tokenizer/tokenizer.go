// Package tokenizer holds the BPE encodings memcascade counts with, and the one list of their
// names (Names). o200k_base and cl100k_base have a fast, exact encoder of this package
// (Encoding); p50k_base, r50k_base and any tiktoken-format vocabulary file are encoded by
// github.com/pkoukk/tiktoken-go (Generic); a Hugging Face tokenizer.json of a byte-level BPE
// model by an encoder of this package that follows the tokenizers library (HF). Every encoder
// returns the tokens of tiktoken's encode_ordinary: special-token text such as "<|endoftext|>"
// is encoded as ordinary text.
//
// The fast encoder's tokens are those of tiktoken-go, token for token, including for strings
// that are not valid UTF-8 (each invalid byte is read as U+FFFD, as a conversion to []rune
// does), for every piece of the split up to 64 KiB: a longer one (an unbroken word of more
// than 64 KiB) is merged in parts, in bounded memory, its count within a few tokens of the
// whole merge (see maxPiece). Its split patterns are hand-written scanners instead of a backtracking regular
// expression, the token table is an open-addressing hash table over the tokens' bytes, and
// pieces of text that take several tokens are remembered in a small bounded cache.
//
// The package owns the encoders and the list of encoding names; tokencount's counters wrap it.
// It imports nothing of memcascade and must stay a leaf.
package tokenizer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Encoding names.
const (
	O200kBase  = "o200k_base"
	CL100kBase = "cl100k_base"
)

// Encoding is a loaded fast BPE encoding (o200k_base or cl100k_base). Safe for concurrent use.
type Encoding struct {
	name    string
	o200k   bool
	classes *classTable
	ranks   *rankTable
	cache   *pieceCache
}

var loaders = map[string]func() (*Encoding, error){
	O200kBase:  sync.OnceValues(func() (*Encoding, error) { return load(O200kBase) }),
	CL100kBase: sync.OnceValues(func() (*Encoding, error) { return load(CL100kBase) }),
}

// Load returns the named fast encoding, o200k_base or cl100k_base; any other name is an error
// (Builtin returns every built-in encoding). The
// ranks are read from the files embedded in github.com/pkoukk/tiktoken-go-loader and parsed at
// most once per process per encoding; later calls return the same *Encoding.
func Load(name string) (*Encoding, error) {
	l, ok := loaders[name]
	if !ok {
		return nil, fmt.Errorf("tokenizer: unknown encoding %q: want %q or %q", name, O200kBase, CL100kBase)
	}
	return l()
}

// loads counts the encodings this process has loaded (see Loaded).
var loads atomic.Int32

// Loaded reports how many encodings this process has loaded: for tests that check a path does
// not load one (the load takes tens of milliseconds and megabytes).
func Loaded() int { return int(loads.Load()) }

func load(name string) (*Encoding, error) {
	loads.Add(1)
	data, err := assets.Assets.ReadFile(name + ".tiktoken")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: loading %s: %w", name, err)
	}
	ranks, err := parseRanks(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: loading %s: %w", name, err)
	}
	return &Encoding{
		name:    name,
		o200k:   name == O200kBase,
		classes: classes(),
		ranks:   ranks,
		cache:   newPieceCache(),
	}, nil
}

// Name returns the encoding's name.
func (e *Encoding) Name() string { return e.name }

// Encode returns the tokens of s, special-token text treated as ordinary text (like tiktoken's
// encode_ordinary).
func (e *Encoding) Encode(s string) []int {
	out, _ := e.run(s, make([]int, 0, len(s)/4+4), false)
	return out
}

// Count returns len(Encode(s)) without building the slice.
func (e *Encoding) Count(s string) int {
	_, n := e.run(s, nil, true)
	return n
}

// run splits s into pieces and appends the tokens of each piece to out, or only counts them if
// count is true. It returns out and the number of tokens.
func (e *Encoding) run(s string, out []int, count bool) ([]int, int) {
	if !utf8.ValidString(s) {
		// The reference reads the text as runes: each invalid byte becomes U+FFFD.
		s = string([]rune(s))
	}
	var scratch [maxLinear]uint32
	t, ranks, n := e.classes, e.ranks, 0
	for p := 0; p < len(s); {
		var q int
		if e.o200k {
			q = t.splitO200k(s, p)
		} else {
			q = t.splitCL100k(s, p)
		}
		piece := s[p:q]
		p = q
		switch len(piece) {
		case 1:
			n++
			if !count {
				out = append(out, int(ranks.single[piece[0]]))
			}
			continue
		case 2:
			if r := ranks.pairs[int(piece[0])<<8|int(piece[1])]; r != noRank {
				n++
				if !count {
					out = append(out, int(r))
				}
			} else {
				n += 2
				if !count {
					out = append(out, int(ranks.single[piece[0]]), int(ranks.single[piece[1]]))
				}
			}
			continue
		}
		h, head := hashKey(piece)
		if r, ok := ranks.lookup(piece, h, head); ok {
			n++
			if !count {
				out = append(out, int(r))
			}
			continue
		}
		var toks []uint32
		switch cached, ok := e.cache.get(piece, h); {
		case ok:
			toks = cached
		case len(piece) > maxPiece:
			// Merged part by part (see maxPiece), each part's tokens counted or appended
			// before the next is merged.
			var part []uint32
			for c := range chunks(piece) {
				part = ranks.mergeHeap(c, part[:0])
				n += len(part)
				if !count {
					for _, t := range part {
						out = append(out, int(t))
					}
				}
			}
			continue
		case len(piece) > maxLinear:
			toks = ranks.mergeHeap(piece, nil)
		default:
			toks = ranks.mergeLinear(piece, scratch[:0])
			e.cache.put(piece, h, toks)
		}
		n += len(toks)
		if !count {
			for _, t := range toks {
				out = append(out, int(t))
			}
		}
	}
	return out, n
}

// maxPiece is the longest piece merged whole, as tiktoken merges it. A longer piece (an
// unbroken word, a run of spaces or of punctuation of more than 64 KiB) is merged in parts of
// at most maxPiece bytes, cut between characters, each part on its own: the merge of a whole
// piece takes about 32 bytes of memory per byte of the piece (a 20 MB word took 600 MB), a part
// 2 MB at most. The count of such a piece may then differ from tiktoken's by the merges a cut
// prevents or changes near it: at most maxPieceDrift tokens per cut over the random long words
// of TestChunkedPieceDrift (measured: see there), a few in a million of the piece's tokens.
// Every piece of maxPiece bytes or less is merged exactly as tiktoken does.
const maxPiece = 64 << 10

// maxPieceDrift bounds how many tokens a cut of a long piece adds or removes against the
// merge of the whole piece (see maxPiece).
const maxPieceDrift = 2

// chunks cuts piece, longer than maxPiece, into parts of about equal length, at most maxPiece
// bytes each, each cut at the start of a character.
func chunks(piece string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		k := (len(piece) + maxPiece - 1) / maxPiece
		size := (len(piece) + k - 1) / k
		for len(piece) > 0 {
			if len(piece) <= maxPiece {
				yield(piece)
				return
			}
			c := size
			for c > 0 && !utf8.RuneStart(piece[c]) {
				c--
			}
			if !yield(piece[:c]) {
				return
			}
			piece = piece[c:]
		}
	}
}
