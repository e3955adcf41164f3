package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

var encodings = []string{O200kBase, CL100kBase}

// The split patterns exactly as tiktoken-go v0.1.8 (encoding.go) compiles them.
var patterns = map[string]string{
	O200kBase: strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
	CL100kBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

var setReferenceLoader sync.Once

// references hold tiktoken-go's encodings, loaded once per test binary.
var references = map[string]func() (*tiktoken.Tiktoken, error){
	O200kBase:  sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadReference(O200kBase) }),
	CL100kBase: sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadReference(CL100kBase) }),
}

func loadReference(name string) (*tiktoken.Tiktoken, error) {
	setReferenceLoader.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	return tiktoken.GetEncoding(name)
}

var regexps = map[string]func() *regexp2.Regexp{
	O200kBase:  sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(patterns[O200kBase], regexp2.None) }),
	CL100kBase: sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(patterns[CL100kBase], regexp2.None) }),
}

func mustLoad(t testing.TB, name string) *Encoding {
	t.Helper()
	e, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	r, err := references[name]()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// referencePieces returns the pieces regexp2 splits s into, as tiktoken-go does.
func referencePieces(name, s string) []string {
	runes := []rune(s)
	var pieces []string
	m, _ := regexps[name]().FindRunesMatch(runes)
	for m != nil {
		pieces = append(pieces, string(runes[m.Index:m.Index+m.Length]))
		m, _ = regexps[name]().FindNextMatch(m)
	}
	return pieces
}

// pieces returns the pieces e splits s into.
func (e *Encoding) pieces(s string) []string {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	var out []string
	for p := 0; p < len(s); {
		var q int
		if e.o200k {
			q = e.classes.splitO200k(s, p)
		} else {
			q = e.classes.splitCL100k(s, p)
		}
		out = append(out, s[p:q])
		p = q
	}
	return out
}

// decode returns the bytes of tokens.
func (e *Encoding) decode(tokens []int) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(e.ranks.token(uint32(t)))
	}
	return b.String()
}

// check compares e's pieces, tokens and count for s with the reference's.
func check(t testing.TB, name, s string) {
	t.Helper()
	e := mustLoad(t, name)
	if got, want := e.pieces(s), referencePieces(name, s); !slices.Equal(got, want) {
		t.Fatalf("%s: pieces of %q:\n got %q\nwant %q", name, s, got, want)
	}
	got, want := e.Encode(s), reference(t, name).EncodeOrdinary(s)
	if len(want) == 0 {
		want = nil
	}
	if len(got) == 0 {
		got = nil
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: Encode(%q):\n got %v\nwant %v", name, s, got, want)
	}
	if n := e.Count(s); n != len(want) {
		t.Fatalf("%s: Count(%q) = %d, want %d", name, s, n, len(want))
	}
	if s := string([]rune(s)); e.decode(got) != s {
		t.Fatalf("%s: tokens of %q decode to %q", name, s, e.decode(got))
	}
}

// tricky are strings that exercise the corners of the split patterns.
var tricky = []string{
	"",
	"hello world",
	"Hello, World!",
	"don't DON'T Don'T I'm I'M i'M we're WE'RE we'Re you've YOU'VE she'll SHE'LL She'Ll he'd HE'D it's IT'S 'tis",
	"'s 'S 't 'T 're 'RE 'Re 'rE 've 'VE 'm 'M 'll 'LL 'lL 'd 'D ' 'x 'sx 'lx 'l",
	"''s '''t x'S X'LL éé'S ÉÉ'VE",
	"1234567 12 1 123 1234 12345678901234567890 3.14159 -42 1,000,000 ½ ⅓ ² ٣٤٥ ４５６",
	"mixed scripts: English, Русский текст, Ελληνικά, עברית, हिन्दी, ไทย, 한국어, 日本語のテキスト",
	"中文字符测试，标点符号。还有全角空格　和半角。",
	"emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷 🤷🏻‍♀️",
	"combining: e\u0301 a\u0300\u0301 \u0301\u0302 x\u20dd Z\u0351\u0352 \u0301abc ABC\u0301 ABC\u0301def",
	"Arabic: مرحبا بالعالم، كيف حالك؟ ١٢٣",
	"line\r\nbreaks\r\n\r\nand\n\n\nmore\r\r\n \n  \n\t\n",
	"trailing spaces   ",
	"   leading spaces",
	"tabs\there\t\tand\t\t\tthere\t",
	"nbsp\u00a0here\u00a0\u00a0x \u00a0y\u00a0 z",
	"line sep\u2028para sep\u2029ideographic\u3000space\u3000\u3000x",
	"nel\u0085x \u0085 y\u000bvt\u000cff",
	"<|endoftext|> <|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|>",
	"\xff\xfe",
	"a\xffb \xfe\xfd c\xc3 d\xe2\x82 e\xed\xa0\x80 f\xf4\x90\x80\x80",
	"a\x00b",
	strings.Repeat(" ", 100) + "x" + strings.Repeat(" ", 100),
	strings.Repeat("1", 100),
	strings.Repeat("a", 300),
	strings.Repeat("ab", 200),
	strings.Repeat("=", 150) + "\n" + strings.Repeat("-", 129),
	strings.Repeat("\n", 50) + strings.Repeat("\r\n", 50),
	"CamelCaseWords HTTPServer XMLHttpRequest iPhone McDonald's ǅemal ǅ ǈ",
	"ʰʲʷ ˢ ʻokina ʼn ꞌ ſs ẞ ß ﬁ ﬀ Ǆ ǅ ǆ İstanbul ıi K Å",
	"path/to/file.go //comment /* block */ http://example.com/a/b?c=d&e=f#g \n/\r\n/",
	"a/\n/b \t/\r\n x!/\r/\n",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n",
	`{"key": "value", "n": [1, 2, 3], "nested": {"a": null}}`,
	"  \n  x",
	" \t x",
	"x  \u3000y",
	"\u00a0abc \u2003abc \u3000abc",
	"\ufeffBOM",
	"\u200b\u200c\u200d zero width",
	"🤖🤖🤖 ...!!! ???",
	"Ⅻ ⅻ Ⅰ ⅰ ⓐ Ⓐ ① ⑴",
	"𝐀𝐁𝐂 𝐚𝐛𝐜 𝟏𝟐𝟑 𐐀𐐨",
	"ab'S'T'RE",
	"A'S a's 'S's",
	" 's",
	"\r",
	"\n",
	" ",
	"'",
	"x\u0345'LL",
}

func TestTricky(t *testing.T) {
	t.Parallel()
	for _, name := range encodings {
		for _, s := range tricky {
			check(t, name, s)
		}
	}
}

// conversationTexts returns every string value of the testdata conversations (message
// contents, tool-call names and arguments, tool results, roles and the tool schemas).
func conversationTexts(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/conversations/*.json*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations: %v", err)
	}
	var texts []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			texts = append(texts, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".jsonl") {
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				var v any
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				walk(v)
			}
		} else {
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			walk(v)
		}
	}
	return texts
}

func TestConversations(t *testing.T) {
	t.Parallel()
	texts := conversationTexts(t)
	for _, name := range encodings {
		total := 0
		for _, s := range texts {
			check(t, name, s)
			total += len(s)
		}
		all := strings.Join(texts, "\n")
		check(t, name, all)
		t.Logf("%s: %d texts, %d bytes, %d tokens", name, len(texts), total, mustLoad(t, name).Count(all))
	}
}

// TestClasses checks the class table against the unicode package for every rune.
func TestClasses(t *testing.T) {
	t.Parallel()
	ct := classes()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := classesOf(r)
		if got := ct.of(r); got != want {
			t.Fatalf("classes of %U = %06b, want %06b", r, got, want)
		}
		if r < utf8.RuneSelf && asciiClasses[r] != want {
			t.Fatalf("ascii classes of %U = %06b, want %06b", r, asciiClasses[r], want)
		}
	}
	// classesOf itself, on a few runes.
	for r, want := range map[rune]uint8{
		'a': cLower | cL, 'A': cUpper | cL, 'ǅ': cUpper | cL, 'ʰ': cUpper | cLower | cL,
		'中': cUpper | cLower | cL, '\u0301': cUpper | cLower, '7': cN, 'Ⅻ': cN,
		'½': cN, ' ': cS, '\u0085': cS, '\u00a0': cS, '\u3000': cS, '\u2028': cS, '\u180e': 0,
		'\u200b': 0, '\r': cS | cNL, '\n': cS | cNL, '\v': cS, '/': 0, '\ufffd': 0,
	} {
		if got := classesOf(r); got != want {
			t.Errorf("classesOf(%U) = %06b, want %06b", r, got, want)
		}
	}
}

// TestContractionCase checks what contraction relies on: regexp2 matches (?i:...) by comparing
// unicode.ToLower of the text, and no rune outside ASCII lower-cases to a letter of the
// contractions or to the apostrophe.
func TestContractionCase(t *testing.T) {
	t.Parallel()
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < utf8.RuneSelf && strings.ContainsRune("'strvemld", l) {
			t.Errorf("unicode.ToLower(%U) = %q", r, l)
		}
	}
	for _, c := range "'strvemld" {
		if unicode.ToLower(unicode.ToUpper(c)) != c {
			t.Errorf("%q does not round-trip", c)
		}
	}
}

// TestMergeHeapMatchesLinear checks the two merge algorithms agree, on random pieces made of
// fragments of real tokens: the first 5,000 pieces of the seed for each encoding in the
// default run, 20,000 under -tags heavy.
func TestMergeHeapMatchesLinear(t *testing.T) {
	t.Parallel()
	n := 5000
	if heavyRun {
		n = 20000
	}
	for _, name := range encodings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, 2))
			e := mustLoad(t, name)
			for range n {
				var b strings.Builder
				n := 2 + rng.IntN(maxLinear-1)
				for b.Len() < n {
					tok := e.ranks.token(uint32(rng.IntN(len(e.ranks.offsets) - 1)))
					if rng.IntN(4) == 0 {
						tok = tok[:rng.IntN(len(tok))+1]
					}
					b.WriteString(tok)
				}
				piece := b.String()[:n]
				lin := e.ranks.mergeLinear(piece, nil)
				hp := e.ranks.mergeHeap(piece, nil)
				if !slices.Equal(lin, hp) {
					t.Fatalf("%s: %q: linear %v, heap %v", name, piece, lin, hp)
				}
			}
		})
	}
}

// TestLongPieces checks pieces longer than maxLinear (merged with the heap) against the
// reference.
func TestLongPieces(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	letters := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéàü")
	for _, name := range encodings {
		for _, s := range []string{
			strings.Repeat("a", maxLinear+1),
			strings.Repeat("x", 1000),
			strings.Repeat(" ", 1000) + "a",
			strings.Repeat("ab", 700),
			strings.Repeat("!?", 300),
			strings.Repeat("\t", 500) + "\n",
		} {
			check(t, name, s)
		}
		for range 20 {
			r := make([]rune, maxLinear+rng.IntN(400))
			for i := range r {
				r[i] = letters[rng.IntN(len(letters))]
			}
			check(t, name, string(r))
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	for _, name := range encodings {
		a, b := mustLoad(t, name), mustLoad(t, name)
		if a != b {
			t.Errorf("%s: Load returned two encodings", name)
		}
		if a.Name() != name {
			t.Errorf("Name() = %q, want %q", a.Name(), name)
		}
	}
	for _, name := range []string{"", "p50k_base", "O200K_BASE", "gpt-4o"} {
		if e, err := Load(name); err == nil {
			t.Errorf("Load(%q) = %v, nil; want an error", name, e)
		}
	}
	if got := mustLoad(t, O200kBase).Encode("hello world"); !slices.Equal(got, []int{24912, 2375}) {
		t.Errorf("o200k_base hello world = %v", got)
	}
	if got := mustLoad(t, CL100kBase).Encode("hello world"); !slices.Equal(got, []int{15339, 1917}) {
		t.Errorf("cl100k_base hello world = %v", got)
	}
}

func TestParseRanksErrors(t *testing.T) {
	t.Parallel()
	var good bytes.Buffer
	for b := range 256 {
		fmt.Fprintf(&good, "%s %d\n", b64([]byte{byte(b)}), b)
	}
	if _, err := parseRanks(good.Bytes()); err != nil {
		t.Fatalf("256 bytes: %v", err)
	}
	for name, extra := range map[string]string{
		"no space":     "YWI=\n",
		"bad rank":     "YWI= x\n",
		"out of order": "YWI= 300\n",
		"bad base64":   "!!!! 256\n",
		"duplicate":    "YQ== 256\n",
	} {
		if _, err := parseRanks(append(bytes.Clone(good.Bytes()), extra...)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := parseRanks([]byte("YQ== 0\n")); err == nil {
		t.Error("one token: no error")
	}
}

// TestParseLine checks the line parser's base64 decoding against encoding/base64.
func TestParseLine(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		rank := rng.IntN(1000000)
		line := fmt.Sprintf("%s %d\nrest", base64.StdEncoding.EncodeToString(b), rank)
		got, r, rest, err := parseLine([]byte("x"), []byte(line))
		if err != nil || string(got) != "x"+string(b) || r != rank || string(rest) != "rest" {
			t.Fatalf("parseLine(%q) = %q, %d, %q, %v; want %q, %d", line, got, r, rest, err, b, rank)
		}
	}
	for _, bad := range []string{"a 1", "abc 1", "ab=c 1", "a=== 1", "=abc 1", "ab!d 1", "YQ==YQ== 1", "YR== 1",
		"YWJ= 1", "YW\nJ 1", "YWJj", "YWJj ", "YWJj 1x", "YWJj  1", "YWJj 1234567890", "YWJj\t1"} {
		if got, r, _, err := parseLine(nil, []byte(bad)); err == nil {
			t.Errorf("parseLine(%q) = %q, %d, nil; want an error", bad, got, r)
		}
	}
}

func b64(b []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	v := uint(b[0]) << 16
	return string([]byte{alphabet[v>>18&63], alphabet[v>>12&63], '=', '='})
}

// TestConcurrent encodes from several goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	texts := conversationTexts(t)
	for _, name := range encodings {
		e := mustLoad(t, name)
		want := make([][]int, len(texts))
		for i, s := range texts {
			want[i] = e.Encode(s)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range texts {
					j := (i + g*len(texts)/4) % len(texts)
					if got := e.Encode(texts[j]); !slices.Equal(got, want[j]) {
						t.Errorf("%s: concurrent Encode differs for text %d", name, j)
						return
					}
					if n := e.Count(texts[j]); n != len(want[j]) {
						t.Errorf("%s: concurrent Count differs for text %d", name, j)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

func FuzzEncodeMatchesTiktoken(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range encodings {
			check(t, name, s)
		}
	})
}

// TestRandomStrings compares pieces and tokens on random strings drawn from runes of every
// class the split patterns distinguish, in the combinations random bytes rarely reach.
func TestRandomStrings(t *testing.T) {
	t.Parallel()
	alphabet := []rune(
		"aAzZsStTrReEvVmMlLdD'''" + // letters of the contractions, apostrophes
			"ǅǈǋ" + // Lt
			"ʰʲˢ々ー" + // Lm
			"中文あアאا" + // Lo
			"éÉßſıİ" + // other Ll, Lu
			"\u0301\u0308\u0345\u20dd\u093f\u0e31" + // Mn, Me, Mc
			"0159٣４Ⅻⅻ½²" + // Nd, Nl, No
			"   \t\r\n\r\n\v\f\u0085\u00a0\u1680\u2003\u2028\u2029\u202f\u3000" + // \s
			"\u200b\ufeff\u180e" + // format characters that are not \s
			".,!?/-_=()[]{}\"#@*&%$^~`|\\:;<>+" +
			"😀👍🏽\u200d\ufffd\x00\x7f")
	n := 5000 // the first 5,000 strings of the seed for each encoding; 20,000 under -tags heavy
	if heavyRun {
		n = 20000
	}
	if testing.Short() {
		n = 2000
	}
	for _, name := range encodings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(5, 6))
			for range n {
				r := make([]rune, 1+rng.IntN(24))
				for i := range r {
					r[i] = alphabet[rng.IntN(len(alphabet))]
				}
				check(t, name, string(r))
			}
		})
	}
}

// TestChunkedPieceDrift compares the count of pieces longer than maxPiece, merged in parts,
// with the merge of the whole piece, on random long words of several alphabets: the count
// differs by at most maxPieceDrift tokens per cut. Pieces of maxPiece bytes or less are
// merged whole (TestLongPieces, TestConversations and the others check them against the
// reference).
func TestChunkedPieceDrift(t *testing.T) {
	t.Parallel()
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyz",
		"etaoinshr",
		"ab",
		"x",
		"abcdefghijklmnopqrstuvwxyzéàüß",
		"中文字符",
		" ",
		"!?.-=",
	}
	// Words per alphabet and encoding, and how far past maxPiece they run: 2 up to 3 x maxPiece
	// in the default run; more under -tags heavy; under -short (the race run) 1, up to 1.25 x,
	// still cut at least once.
	words, over := 2, 2*maxPiece
	if heavyRun {
		words = 12
	} else if testing.Short() {
		words, over = 1, maxPiece/4
	}
	worst, total, cutsSeen := 0, 0, 0
	for _, name := range encodings {
		e := mustLoad(t, name)
		rng := rand.New(rand.NewPCG(36, 64))
		for _, alphabet := range alphabets {
			letters := []rune(alphabet)
			for range words {
				var b strings.Builder
				size := maxPiece + 1 + rng.IntN(over)
				for b.Len() < size {
					b.WriteRune(letters[rng.IntN(len(letters))])
				}
				s := b.String()
				pieces := 0
				for p := 0; p < len(s); pieces++ {
					if e.o200k {
						p = e.classes.splitO200k(s, p)
					} else {
						p = e.classes.splitCL100k(s, p)
					}
				}
				if pieces != 1 {
					continue // not one piece for this encoding's split: nothing chunked
				}
				cuts := 0
				for range chunks(s) {
					cuts++
				}
				cuts--
				whole := len(e.ranks.mergeHeap(s, nil))
				got := e.Count(s)
				drift := got - whole
				if drift < 0 {
					drift = -drift
				}
				worst, total, cutsSeen = max(worst, drift), total+drift, cutsSeen+cuts
				if drift > maxPieceDrift*cuts {
					t.Errorf("%s: a word of %d bytes of %q in %d parts counts %d tokens, its whole merge %d: off by %d, over %d a cut", name, len(s), alphabet, cuts+1, got, whole, drift, maxPieceDrift)
				}
				if enc := e.Encode(s); len(enc) != got {
					t.Errorf("%s: Encode gives %d tokens, Count %d", name, len(enc), got)
				}
			}
		}
	}
	t.Logf("%d cuts: %d tokens of difference in all, %d at most in one word", cutsSeen, total, worst)
}
