package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/memcascade/memcascade/internal/hftest"
	"github.com/memcascade/memcascade/internal/nodetest"
)

// hfDir holds the tokenizer.json files (installed from its package-lock.json) and the vectors
// the reference implementations made from them (vectors.mjs; see PROVENANCE.md there).
const hfDir = "../testdata/hf-tokenizers"

// hfVectors is vectors.json.gz.
type hfVectors struct {
	Reference string `json:"reference"`
	Also      string `json:"also"`
	Files     map[string]struct {
		Package string `json:"package"`
		Path    string `json:"path"`
		SHA256  string `json:"sha256"`
	} `json:"files"`
	// Texts are the recorded conversations' texts, then the hostile and random strings.
	Texts    []string           `json:"texts"`
	Variants []hfVariantVectors `json:"variants"`
	// Decompositions are [code point, canonical decomposition] where it is not the code point.
	Decompositions [][2]json.RawMessage `json:"decompositions"`
	// Normalizers are, for each form, [count, hash] runs over the code points (see
	// TestHFNormalizers).
	Normalizers map[string][][2]uint32 `json:"normalizers"`
}

// hfVariantVectors are the vectors of one variant of a file.
type hfVariantVectors struct {
	Name string                     `json:"name"`
	Base string                     `json:"base"`
	Set  map[string]json.RawMessage `json:"set"`
	// Texts are indexes in hfVectors.Texts, and IDs the reference's tokens of each; JS holds the
	// tokens of @huggingface/tokenizers where they differ, by index.
	Texts []int            `json:"texts"`
	IDs   [][]int          `json:"ids"`
	JS    map[string][]int `json:"js"`
	// Pieces are [index, byte lengths of the reference pre-tokenizer's pieces].
	Pieces [][2]json.RawMessage `json:"pieces"`
	Sweep  *struct {
		Patterns []string `json:"patterns"`
		Runs     [][2]int `json:"runs"`
	} `json:"sweep"`
	Messages []struct {
		File   string `json:"file"`
		Counts []int  `json:"counts"`
		Total  int    `json:"total"`
	} `json:"messages"`
}

var readVectors = sync.OnceValues(func() (*hfVectors, error) {
	var v hfVectors
	if err := hftest.Decode(&v); err != nil {
		return nil, err
	}
	return &v, nil
})

func vectors(t testing.TB) *hfVectors {
	t.Helper()
	v, err := readVectors()
	if err != nil {
		t.Fatalf("reading the vectors: %v", err)
	}
	return v
}

// hfFileData returns the tokenizer.json named base in the vectors, installed from the lockfile
// (the test is skipped, saying so, when it cannot be; under CI it fails), after checking that
// it is the file the vectors were made from.
func hfFileData(t testing.TB, base string) []byte {
	t.Helper()
	v := vectors(t)
	f, ok := v.Files[base]
	if !ok {
		t.Fatalf("no file %q in the vectors", base)
	}
	pkg := f.Package[:strings.LastIndexByte(f.Package, '@')]
	_, dir := nodetest.Require(t, hfDir, pkg)
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, f.Path))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != f.SHA256 {
		t.Fatalf("%s/%s has sha256 %x, the vectors were made from %s", pkg, f.Path, sum, f.SHA256)
	}
	return data
}

var (
	hfCache sync.Map // variant name -> *HF
	hfParse sync.Map // variant name -> *sync.Mutex, held while it is parsed
)

// hfVariant returns the encoding of a variant of the vectors: its base file with the variant's
// keys replaced, as vectors.mjs replaces them. Each variant is parsed once per test binary,
// whatever the number of tests that ask for it at the same time.
func hfVariant(t testing.TB, name string) *HF {
	t.Helper()
	if h, ok := hfCache.Load(name); ok {
		return h.(*HF)
	}
	mu, _ := hfParse.LoadOrStore(name, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if h, ok := hfCache.Load(name); ok {
		return h.(*HF)
	}
	v := vectors(t)
	i := slices.IndexFunc(v.Variants, func(x hfVariantVectors) bool { return x.Name == name })
	if i < 0 {
		t.Fatalf("no variant %q in the vectors", name)
	}
	data := applyVariant(t, hfFileData(t, v.Variants[i].Base), v.Variants[i].Set)
	h, err := ParseHF("hf:"+name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	hfCache.Store(name, h)
	return h
}

// applyVariant replaces top-level keys of a tokenizer.json (and, under "model", keys of the
// model); a Split whose Regex is null takes the file's own Split pattern.
func applyVariant(t testing.TB, data []byte, set map[string]json.RawMessage) []byte {
	t.Helper()
	if len(set) == 0 {
		return data
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var own struct {
		PreTokenizers []struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex string `json:"Regex"`
			} `json:"pattern"`
		} `json:"pretokenizers"`
	}
	if err := json.Unmarshal(top["pre_tokenizer"], &own); err != nil {
		t.Fatal(err)
	}
	for k, raw := range set {
		if k == "model" {
			var model, changes map[string]json.RawMessage
			if json.Unmarshal(top["model"], &model) != nil || json.Unmarshal(raw, &changes) != nil {
				t.Fatal("model: not an object")
			}
			for mk, mv := range changes {
				model[mk] = mv
			}
			top["model"], _ = json.Marshal(model)
			continue
		}
		for _, p := range own.PreTokenizers {
			if p.Type == "Split" {
				q, _ := json.Marshal(p.Pattern.Regex)
				raw = json.RawMessage(strings.ReplaceAll(string(raw), `"Regex":null`, `"Regex":`+string(q)))
				break
			}
		}
		top[k] = raw
	}
	out, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHFVectors checks that every variant encodes every text of the vectors (the recorded
// conversations, hostile and random strings) to exactly the reference's tokens.
func TestHFVectors(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	for _, variant := range v.Variants {
		t.Run(variant.Name, func(t *testing.T) {
			t.Parallel()
			h := hfVariant(t, variant.Name)
			if len(variant.IDs) != len(variant.Texts) {
				t.Fatalf("%d texts, %d token lists", len(variant.Texts), len(variant.IDs))
			}
			for k, i := range variant.Texts {
				text, want := v.Texts[i], variant.IDs[k]
				got := h.Encode(text)
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("Encode(%q):\n got %v\nwant %v", text, got, want)
					continue
				}
				if n := h.Count(text); n != len(want) {
					t.Errorf("Count(%q) = %d, want %d", text, n, len(want))
				}
			}
			t.Logf("%d texts (%s differs from %s on %d of them)", len(variant.Texts), v.Also, v.Reference, len(variant.JS))
		})
	}
}

// TestHFPieces checks the pre-tokenizers' pieces of the hostile and random strings against the
// reference's pre-tokenizer.
func TestHFPieces(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	for _, variant := range v.Variants {
		if variant.Pieces == nil {
			continue
		}
		t.Run(variant.Name, func(t *testing.T) {
			t.Parallel()
			h := hfVariant(t, variant.Name)
			for _, e := range variant.Pieces {
				var i int
				var want []int
				if json.Unmarshal(e[0], &i) != nil || json.Unmarshal(e[1], &want) != nil {
					t.Fatalf("bad pieces entry %s", e)
				}
				if got := h.pieceLengths(v.Texts[i]); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("pieces of %q: lengths\n got %v\nwant %v", v.Texts[i], got, want)
				}
			}
		})
	}
}

// pieceLengths returns the byte lengths of the pieces the pre-tokenizer splits s into (without
// the normalizer).
func (h *HF) pieceLengths(s string) []int {
	var out []int
	h.pieces(s, func(p string) { out = append(out, len(p)) })
	return out
}

// sparse reports whether the sweeps leave r out: they check every code point but those of the
// planes with no character in any version (4 to 13) and of the private use planes (15 and 16),
// where they check one in 61 (a few in each 256-code-point block of the class tables).
func sparse(r rune) bool {
	return (r >= 0x40000 && r < 0xe0000 || r >= 0xf0000) && r%61 != 0
}

// sweepProbe is vectors.mjs's probe.
func sweepProbe(c string) string {
	return "a" + c + "1" + c + c + "!" + c + "'" + c + "x A" + c + "a " + c + "a\n" + c + " " + c + "\n  " + c
}

// TestHFSweep splits every code point in the probe's contexts and checks the pieces against the
// reference's.
func TestHFSweep(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	for _, variant := range v.Variants {
		if variant.Sweep == nil {
			continue
		}
		t.Run(variant.Name, func(t *testing.T) {
			t.Parallel()
			h := hfVariant(t, variant.Name)
			sw := variant.Sweep
			patterns := make([][]int, len(sw.Patterns))
			for i, p := range sw.Patterns {
				for f := range strings.SplitSeq(p, ",") {
					n, err := strconv.Atoi(f)
					if err != nil {
						t.Fatalf("bad pattern %q", p)
					}
					patterns[i] = append(patterns[i], n)
				}
			}
			var got []int
			emit := func(p string) { got = append(got, len(p)) }
			r, bad := rune(0), 0
			for _, run := range sw.Runs {
				want := patterns[run[1]]
				for range run[0] {
					if r >= 0xd800 && r <= 0xdfff {
						r = 0xe000
					}
					if sparse(r) {
						r++
						continue
					}
					probe := sweepProbe(string(r))
					got = got[:0]
					h.pieces(probe, emit)
					if !slices.Equal(got, want) {
						if bad++; bad <= 20 {
							t.Errorf("U+%04X: pieces of the probe %q\n got %v\nwant %v", r, probe, got, want)
						}
					}
					r++
				}
			}
			if r != unicode.MaxRune+1 {
				t.Fatalf("the sweep ends at U+%04X", r)
			}
			if bad > 0 {
				t.Errorf("%d code points differ", bad)
			}
		})
	}
}

// TestHFNormalizers checks the Unicode normalization forms against the reference's on every
// code point c in the contexts c, c U+0301, c U+0323, "e" c and c's canonical decomposition (as
// the vectors give it, where it differs from c): the vectors hold, per code point, 0 when every
// output is its input, else hashOutputs of the outputs.
func TestHFNormalizers(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	decomposed := map[rune]string{}
	for _, d := range v.Decompositions {
		var c rune
		var s string
		if json.Unmarshal(d[0], &c) != nil || json.Unmarshal(d[1], &s) != nil {
			t.Fatalf("bad decomposition %s", d)
		}
		decomposed[c] = s
	}
	if len(decomposed) < 2000 {
		t.Fatalf("%d decompositions in the vectors", len(decomposed))
	}
	forms := map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runs := v.Normalizers[name]
			if len(runs) == 0 {
				t.Fatal("no vectors")
			}
			n := newNormalizer(form)
			r, bad, changed := rune(0), 0, 0
			ins := make([]string, 0, 5)
			outs := make([]string, 0, 5)
			for _, run := range runs {
				for range run[0] {
					if r >= 0xd800 && r <= 0xdfff {
						r = 0xe000
					}
					if sparse(r) {
						r++
						continue
					}
					s := string(r)
					ins = append(ins[:0], s, s+"\u0301", s+"\u0323", "e"+s)
					if d, ok := decomposed[r]; ok {
						ins = append(ins, d)
					}
					outs = outs[:0]
					same := true
					for _, in := range ins {
						o := n.String(in)
						outs = append(outs, o)
						same = same && o == in
					}
					got := uint32(0)
					if !same {
						got = hashOutputs(outs)
						changed++
					}
					if got != run[1] {
						if bad++; bad <= 20 {
							t.Errorf("U+%04X: the outputs %+q of %+q are not the reference's", r, outs, ins)
						}
					}
					r++
				}
			}
			if r != unicode.MaxRune+1 {
				t.Fatalf("the vectors end at U+%04X", r)
			}
			if bad > 0 {
				t.Errorf("%d code points differ", bad)
			}
			t.Logf("%d code points with a changed output, all the reference's", changed)
		})
	}
}

// hashOutputs is vectors.mjs's: FNV-1a (32 bits) of the outputs, each followed by a zero byte.
func hashOutputs(outs []string) uint32 {
	h := fnv.New32a()
	for _, o := range outs {
		h.Write([]byte(o))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

// BenchmarkHFLoad parses each tokenizer.json as shipped (a process does it once per file), and
// reports the memory the parsed encoding keeps (retained-MB).
func BenchmarkHFLoad(b *testing.B) {
	for _, name := range []string{"qwen3", "llama3"} {
		b.Run(name, func(b *testing.B) {
			data := hfFileData(b, name)
			hfClasses()
			var h *HF
			loop(b, len(data), func() {
				var err error
				if h, err = ParseHF(name, data); err != nil {
					b.Fatal(err)
				}
			})
			var before, after runtime.MemStats
			h = nil
			runtime.GC()
			runtime.ReadMemStats(&before)
			h, _ = ParseHF(name, data)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(h)
			runtime.KeepAlive(data)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "retained-MB")
		})
	}
}

// BenchmarkHFEncode encodes the concatenated text of the testdata conversations with each
// tokenizer.json (compare BenchmarkEncode, the built-in encodings on the same text).
func BenchmarkHFEncode(b *testing.B) {
	text := strings.Join(conversationTexts(b), "\n")
	for _, name := range []string{"qwen3", "llama3"} {
		b.Run(name, func(b *testing.B) {
			h := hfVariant(b, name)
			b.Run("encode", func(b *testing.B) { loop(b, len(text), func() { h.Encode(text) }) })
			b.Run("count", func(b *testing.B) { loop(b, len(text), func() { h.Count(text) }) })
		})
	}
}

// BenchmarkHFEncodeMessages counts the conversations' texts one by one, as a token counter
// sees them (many short strings).
func BenchmarkHFEncodeMessages(b *testing.B) {
	texts := conversationTexts(b)
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	for _, name := range []string{"qwen3", "llama3"} {
		b.Run(name, func(b *testing.B) {
			h := hfVariant(b, name)
			loop(b, size, func() {
				for _, s := range texts {
					h.Count(s)
				}
			})
		})
	}
}

// TestHFChunkedPieceDrift is TestChunkedPieceDrift for the Hugging Face encoder: a piece
// longer than maxPiece is merged in parts, its count within maxPieceDrift tokens a cut of the
// merge of the whole piece.
func TestHFChunkedPieceDrift(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	alphabets := []string{"abcdefghijklmnopqrstuvwxyz", "ab", "x", "éàüß中文", " "}
	checked, bases := 0, map[string]bool{}
	over := 2 * maxPiece // how far past maxPiece a word runs; under -short (the race run) less
	if testing.Short() {
		over = maxPiece / 4
	}
	for _, variant := range v.Variants {
		if bases[variant.Base] {
			continue // one variant of each file: the merges are the file's
		}
		h := hfVariant(t, variant.Name)
		if len(h.forms) > 0 {
			continue // a normalizer changes the text before the split
		}
		bases[variant.Base] = true
		rng := rand.New(rand.NewPCG(36, 65))
		for _, alphabet := range alphabets {
			letters := []rune(alphabet)
			var b strings.Builder
			size := maxPiece + 1 + rng.IntN(over)
			for b.Len() < size {
				b.WriteRune(letters[rng.IntN(len(letters))])
			}
			s := b.String()
			var pieces []string
			h.pieces(s, func(p string) { pieces = append(pieces, p) })
			if len(pieces) != 1 || len(pieces[0]) <= maxPiece {
				continue // not one long piece for this pre-tokenizer: nothing chunked
			}
			cuts := -1
			for range chunks(pieces[0]) {
				cuts++
			}
			whole := len(h.piece(pieces[0], nil))
			got := h.Count(s)
			drift := got - whole
			if drift < 0 {
				drift = -drift
			}
			if drift > maxPieceDrift*cuts {
				t.Errorf("%s: a word of %d bytes of %q in %d parts counts %d tokens, its whole merge %d", variant.Name, len(s), alphabet, cuts+1, got, whole)
			}
			if enc := h.Encode(s); len(enc) != got {
				t.Errorf("%s: Encode gives %d tokens, Count %d", variant.Name, len(enc), got)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no variant splits a long word into one piece: nothing checked")
	}
	t.Logf("%d long pieces of %d files checked", checked, len(bases))
}
