package tokenizer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Encoder encodes text into the tokens of one encoding, special-token text treated as ordinary
// text. Implementations are safe for concurrent use.
type Encoder interface {
	// Name is the encoding's name.
	Name() string
	// Encode returns the tokens of s.
	Encode(s string) []int
	// Count returns len(Encode(s)).
	Count(s string) int
}

// Names of the encodings built into the package, and the split patterns of those that
// github.com/pkoukk/tiktoken-go encodes (o200k_base and cl100k_base have hand-written
// scanners; see split.go).
const (
	P50kBase = "p50k_base"
	R50kBase = "r50k_base"

	// CL100kPattern is cl100k_base's split pattern, as tiktoken-go compiles it. Llama 3's
	// tokenizer uses the same pattern.
	CL100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// p50kPattern is the split pattern of p50k_base and r50k_base (GPT-2's).
	p50kPattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// builtins is the one list of the encodings known by name, in the order Names gives them:
// each loads at most once per process, on first use.
var builtins = []struct {
	name string
	load func() (Encoder, error)
}{
	{O200kBase, fast(O200kBase)},
	{CL100kBase, fast(CL100kBase)},
	{P50kBase, embedded(P50kBase, p50kPattern)},
	{R50kBase, embedded(R50kBase, p50kPattern)},
}

func fast(name string) func() (Encoder, error) {
	return func() (Encoder, error) { return Load(name) }
}

func embedded(name, pattern string) func() (Encoder, error) {
	return sync.OnceValues(func() (Encoder, error) {
		loads.Add(1)
		data, err := assets.Assets.ReadFile(name + ".tiktoken")
		if err != nil {
			return nil, fmt.Errorf("tokenizer: loading %s: %w", name, err)
		}
		g, err := newGeneric(name, data, pattern)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: loading %s: %w", name, err)
		}
		return g, nil
	})
}

// Names returns the names of the built-in encodings: o200k_base, cl100k_base, p50k_base,
// r50k_base.
func Names() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// Known reports whether name is a built-in encoding.
func Known(name string) bool {
	for _, b := range builtins {
		if b.name == name {
			return true
		}
	}
	return false
}

// Builtin returns the named built-in encoding (see Names); any other name is an error. The
// encoding is loaded at most once per process: o200k_base and cl100k_base by this package's
// fast encoder (see Load), p50k_base and r50k_base by tiktoken-go from the files embedded in
// github.com/pkoukk/tiktoken-go-loader.
func Builtin(name string) (Encoder, error) {
	for _, b := range builtins {
		if b.name == name {
			return b.load()
		}
	}
	return nil, fmt.Errorf("tokenizer: unknown encoding %q: want one of %v", name, Names())
}

// Generic is an encoding of any tiktoken-format vocabulary, encoded by tiktoken-go with a
// split pattern in regexp2's syntax. It is exact for any pattern tiktoken-go accepts, and
// slower than Encoding: text is read as runes and split by a backtracking regular expression,
// so a text takes several times its size in memory while it is encoded.
type Generic struct {
	name string
	t    *tiktoken.Tiktoken
}

// NewGeneric builds an encoding from a vocabulary in tiktoken's format (one token a line: its
// bytes in standard base64, a space, its rank; Llama 3's tokenizer.model is such a file) and a
// split pattern ("" means CL100kPattern). name is what Name returns. Errors name the line.
func NewGeneric(name string, vocab []byte, pattern string) (*Generic, error) {
	if pattern == "" {
		pattern = CL100kPattern
	}
	return newGeneric(name, vocab, pattern)
}

func newGeneric(name string, vocab []byte, pattern string) (*Generic, error) {
	ranks, err := parseVocabulary(vocab)
	if err != nil {
		return nil, err
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, map[string]int{}, pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return &Generic{name: name, t: tiktoken.NewTiktoken(bpe, nil, nil)}, nil
}

// parseVocabulary reads a tiktoken-format file into tiktoken-go's rank map. Every rank must be
// distinct, and so must every token.
func parseVocabulary(data []byte) (map[string]int, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	ranks, seen := make(map[string]int, n), make(map[int]int, n)
	for line := 1; len(data) > 0; line++ {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		l = bytes.TrimSuffix(l, []byte{'\r'})
		if len(l) == 0 {
			continue
		}
		tok64, rankText, ok := bytes.Cut(l, []byte{' '})
		if !ok {
			return nil, fmt.Errorf("line %d: want a base64 token, a space and a rank", line)
		}
		tok, err := base64.StdEncoding.DecodeString(string(tok64))
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("line %d: the token is not base64 of at least one byte", line)
		}
		rank, err := strconv.Atoi(string(rankText))
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("line %d: the rank %q is not a number 0 or more", line, rankText)
		}
		if prev, dup := seen[rank]; dup {
			return nil, fmt.Errorf("line %d: rank %d already given on line %d", line, rank, prev)
		}
		if _, dup := ranks[string(tok)]; dup {
			return nil, fmt.Errorf("line %d: token %q given twice", line, tok64)
		}
		ranks[string(tok)], seen[rank] = rank, line
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("no token in the vocabulary")
	}
	for b := range 256 {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			// tiktoken-go would panic on a piece it cannot merge down to tokens.
			return nil, fmt.Errorf("the byte 0x%02x is not a token: every single byte must be", b)
		}
	}
	return ranks, nil
}

// Name returns the encoding's name.
func (g *Generic) Name() string { return g.name }

// Encode returns the tokens of s, special-token text treated as ordinary text.
func (g *Generic) Encode(s string) []int {
	if s == "" {
		return []int{}
	}
	return g.t.EncodeOrdinary(s)
}

// Count returns len(Encode(s)).
func (g *Generic) Count(s string) int { return len(g.Encode(s)) }
