package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// byteLevelString returns the byte-level characters of b (GPT-2's bytes_to_unicode).
func byteLevelString(b string) string {
	var out []rune
	for i := range len(b) {
		for r, v := range byteLevelRunes {
			if v == uint16(b[i]) {
				out = append(out, rune(r))
			}
		}
	}
	return string(out)
}

// smallHF returns a tokenizer.json: every byte (byte b is token b), then the merges in order
// (each merges two tokens given by their bytes; the merged token gets the next id), with
// the pre-tokenizer and normalizer given (JSON), and model fields replaced by model.
func smallHF(t testing.TB, merges [][2]string, pre, normalizer string, model map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[byteLevelString(string([]byte{byte(b)}))] = b
	}
	ms := []string{}
	for _, m := range merges {
		a, b := byteLevelString(m[0]), byteLevelString(m[1])
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
		}
		ms = append(ms, a+" "+b)
	}
	md := map[string]any{"type": "BPE", "vocab": vocab, "merges": ms, "dropout": nil, "ignore_merges": false}
	for k, v := range model {
		md[k] = v
	}
	f := map[string]any{"version": "1.0", "added_tokens": []any{}, "model": md,
		"pre_tokenizer": json.RawMessage(pre), "normalizer": json.RawMessage(normalizer)}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const byteLevelOnly = `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}`

// TestHFMergeOrder checks the BPE of a tokenizer.json: merges apply in their order (not by the
// rank of the merged token, as tiktoken's do), only the merges listed apply, ignore_merges
// takes a piece that is a token as it is, and merges in either form read the same.
func TestHFMergeOrder(t *testing.T) {
	t.Parallel()
	// Tokens: 256 "bc", 257 "ab", 258 "abc" (= "a" + "bc"), 259 "xy".
	merges := [][2]string{{"b", "c"}, {"a", "b"}, {"a", "bc"}, {"x", "y"}}
	h, err := ParseHF("small", smallHF(t, merges, byteLevelOnly, "null", nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"abc", []int{258}},        // b c first (merge 0), then a bc (merge 2)
		{"abab", []int{257, 257}},  // a b twice
		{"ababc", []int{257, 258}}, // b c (pos 3) before a b: then a b (pos 0), then a bc
		{"xyz", []int{259, 'z'}},   // no merge with z
		{"bca", []int{256, 'a'}},   // bc a is no merge
		{"a", []int{'a'}},          // one byte
		{"\xff", []int{0xfd}},      // an invalid byte is U+FFFD, three bytes, here unmerged
		{"é", []int{0xc3, 0xa9}},   // bytes, not characters
		{"", nil},                  //
		{strings.Repeat("ab", 100) + "c", append(slices.Repeat([]int{257}, 99), 258)}, // the heap, over 128 bytes
	} {
		got := h.Encode(tc.text)
		if tc.text == "\xff" {
			tc.want = []int{0xef, 0xbf, 0xbd}
		}
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
		if h.Count(tc.text) != len(tc.want) {
			t.Errorf("Count(%q) = %d, want %d", tc.text, h.Count(tc.text), len(tc.want))
		}
	}
	// "abc" is a token, but only by "a"+"bc": with merges [a b, ab c] missing, "ab c" stays two
	// tokens, unless ignore_merges takes the piece whole.
	merges = [][2]string{{"a", "b"}, {"b", "c"}, {"a", "bc"}}
	for _, ignore := range []bool{false, true} {
		h, err := ParseHF("small", smallHF(t, merges, byteLevelOnly, "null", map[string]any{"ignore_merges": ignore}))
		if err != nil {
			t.Fatal(err)
		}
		want := []int{256, 'c'} // a b first, then "ab" "c" has no merge
		if ignore {
			want = []int{258}
		}
		if got := h.Encode("abc"); !slices.Equal(got, want) {
			t.Errorf("ignore_merges %v: Encode(abc) = %v, want %v", ignore, got, want)
		}
	}
	// The pair form.
	pairs := smallHF(t, merges, byteLevelOnly, "null", map[string]any{"merges": [][2]string{{"a", "b"}, {"b", "c"}, {"a", "bc"}}})
	h, err = ParseHF("pairs", pairs)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Encode("abc"); !slices.Equal(got, []int{256, 'c'}) {
		t.Errorf("pair form: Encode(abc) = %v", got)
	}
}

// TestParseHFErrors checks that what the encoder does not support, and what is malformed, is
// refused with the component named.
func TestParseHFErrors(t *testing.T) {
	t.Parallel()
	good := func(model map[string]any) []byte {
		return smallHF(t, [][2]string{{"a", "b"}}, byteLevelOnly, "null", model)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not JSON", []byte("{"), "not a tokenizer.json"},
		{"trailing data", append(good(nil), '}'), "data after the object"},
		{"no model", []byte(`{"version": "1.0"}`), "model: missing"},
		{"WordPiece", good(map[string]any{"type": "WordPiece"}), `model: type "WordPiece" is not supported`},
		{"dropout", good(map[string]any{"dropout": 0.1}), "model: dropout 0.1 is not supported"},
		{"prefix", good(map[string]any{"continuing_subword_prefix": "##"}), "continuing_subword_prefix"},
		{"suffix", good(map[string]any{"end_of_word_suffix": "</w>"}), "end_of_word_suffix"},
		{"no vocab", good(map[string]any{"vocab": nil}), "model.vocab: not an object"},
		{"vocab not an object", good(map[string]any{"vocab": []int{1}}), "model.vocab: not an object"},
		{"bad id", good(map[string]any{"vocab": map[string]any{"a": "x"}}), `model.vocab: token "a": the id is not a number`},
		{"missing byte", good(map[string]any{"vocab": map[string]int{"a": 0}}), "model.vocab: the byte 0x00 ('Ā') is not a token"},
		{"id twice", good(map[string]any{"vocab": map[string]int{"a": 0, "b": 0}}), "model.vocab: id 0 is given to two tokens"},
		{"merges not an array", good(map[string]any{"merges": "a b"}), "model.merges: not an array"},
		{"merge of three", good(map[string]any{"merges": []string{"a b c"}}), "model.merges: merge 1: \"a b c\": want two tokens separated by one space"},
		{"merge not in vocab", good(map[string]any{"merges": []string{"a b", "b c"}}), `model.merges: merge 2: "bc" is not in the vocabulary`},
		{"pair of one", good(map[string]any{"merges": [][]string{{"a"}}}), "model.merges: merge 1: want two tokens"},
		{"Metaspace", smallHF(t, nil, `{"type": "Metaspace"}`, "null", nil), `pre_tokenizer: type "Metaspace" is not supported`},
		{"no pre-tokenizer", smallHF(t, nil, "null", "null", nil), "pre_tokenizer: none: a byte-level BPE has a ByteLevel pre-tokenizer"},
		{"ByteLevel first", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [`+byteLevelOnly+`, {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated"}]}`, "null", nil),
			"pre_tokenizer.pretokenizers[0]: ByteLevel must be the last pre-tokenizer"},
		{"no ByteLevel", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated"}]}`, "null", nil),
			"pre_tokenizer.pretokenizers[0]: the last pre-tokenizer must be ByteLevel"},
		{"Digits", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true}, `+byteLevelOnly+`]}`, "null", nil),
			`pre_tokenizer.pretokenizers[0]: type "Digits" is not supported`},
		{"Split Removed", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed"}, `+byteLevelOnly+`]}`, "null", nil),
			`Split behavior "Removed" is not supported`},
		{"Split String", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"}, `+byteLevelOnly+`]}`, "null", nil),
			"a Split without a Regex pattern is not supported"},
		{"Split inverted", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated", "invert": true}, `+byteLevelOnly+`]}`, "null", nil),
			"an inverted Split is not supported"},
		{"bad regex", smallHF(t, nil, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?<"}, "behavior": "Isolated"}, `+byteLevelOnly+`]}`, "null", nil),
			`pre_tokenizer.pretokenizers[0]: pattern "(?<"`},
		{"Lowercase", smallHF(t, nil, byteLevelOnly, `{"type": "Lowercase"}`, nil), `normalizer: type "Lowercase" is not supported`},
		{"Prepend in a Sequence", smallHF(t, nil, byteLevelOnly, `{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "_"}]}`, nil),
			`normalizer.normalizers[1]: type "Prepend" is not supported`},
	} {
		if _, err := ParseHF(tc.name, tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestIsHFJSON checks how a tokenizer.json is told from a tiktoken-format file.
func TestIsHFJSON(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"model": {}}`:          true,
		"\ufeff \n\t{":           true,
		"IQ== 0\nIg== 1\n":       false,
		"":                       false,
		"  ":                     false,
		"[1, 2]":                 false,
		"e30= 0\n":               false, // base64 of "{}"
		"\n{\"version\": \"1\"}": true,
	} {
		if got := IsHFJSON([]byte(data)); got != want {
			t.Errorf("IsHFJSON(%q) = %v, want %v", data, got, want)
		}
	}
}

// TestHFRegexpSplit checks the Split step of a pattern without a scanner (run by regexp2): its
// matches and the text between them are pieces, and the pieces of each are split again by the
// next step.
func TestHFRegexpSplit(t *testing.T) {
	t.Parallel()
	pre := `{"type": "Sequence", "pretokenizers": [
		{"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
		{"type": "Split", "pattern": {"Regex": "[a-z]+"}, "behavior": "Isolated", "invert": false},
		{"type": "ByteLevel", "add_prefix_space": true, "use_regex": false}]}`
	h, err := ParseHF("split", smallHF(t, nil, pre, "null", nil))
	if err != nil {
		t.Fatal(err)
	}
	// Pieces: "12345" -> "123" "45"; "ab!cd" -> "ab" "!" "cd"; each given a prefix space.
	if got, want := h.pieceLengths("12345ab!cd"), []int{4, 3, 3, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("pieces %v, want %v", got, want)
	}
	if n := h.Count("12345ab!cd"); n != 15 {
		t.Errorf("Count = %d, want 15 (one per byte, spaces included)", n)
	}
}

// TestHFConcurrent encodes from several goroutines at once with a scanner, regexp2 and the
// normalizer (go test -race checks the shared cache, the merge flags and regexp2).
func TestHFConcurrent(t *testing.T) {
	t.Parallel()
	pre := `{"type": "Sequence", "pretokenizers": [
		{"type": "Split", "pattern": {"Regex": "\\p{L}+|\\p{N}|\\s+|."}, "behavior": "Isolated", "invert": false},
		{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]}`
	merges := [][2]string{{"a", "b"}, {"ab", "c"}, {" ", "x"}, {"1", "2"}}
	h, err := ParseHF("concurrent", smallHF(t, merges, pre, `{"type": "NFC"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"abc abc", "e\u0301e\u0301 x 12", strings.Repeat("abcab ", 50), "\U00010041\u0301 x"}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = h.Encode(s)
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for k := range 200 {
				i := (g + k) % len(texts)
				if got := h.Encode(texts[i]); !slices.Equal(got, want[i]) {
					t.Errorf("Encode(%q) = %v, then %v", texts[i], want[i], got)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
