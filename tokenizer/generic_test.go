package tokenizer

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBuiltinNames checks the one list of encodings: every name loads, Known agrees, and any
// other name is refused with the list.
func TestBuiltinNames(t *testing.T) {
	t.Parallel()
	if want := []string{O200kBase, CL100kBase, P50kBase, R50kBase}; !slices.Equal(Names(), want) {
		t.Fatalf("Names() = %v, want %v", Names(), want)
	}
	for _, name := range Names() {
		e, err := Builtin(name)
		if err != nil || e.Name() != name || !Known(name) {
			t.Fatalf("Builtin(%q) = %v, %v (Known %v)", name, e, err, Known(name))
		}
		if again, _ := Builtin(name); again != e {
			t.Errorf("%s: loaded twice", name)
		}
		if n := e.Count("hello world"); n != 2 || len(e.Encode("hello world")) != 2 {
			t.Errorf("%s: hello world counts %d", name, n)
		}
	}
	if _, err := Builtin("p60k_base"); err == nil || !strings.Contains(err.Error(), "r50k_base") || Known("p60k_base") {
		t.Errorf("Builtin(p60k_base): err = %v, want one listing the encodings", err)
	}
}

// vocab is a small vocabulary: every byte, then the given merges, in rank order.
func vocab(merges ...string) []byte {
	var b strings.Builder
	for i := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(i)}), i)
	}
	for i, m := range merges {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(m)), 256+i)
	}
	return []byte(b.String())
}

// TestNewGeneric checks that a vocabulary file encodes by its merges and split pattern, and
// that a malformed one is refused naming the line.
func TestNewGeneric(t *testing.T) {
	t.Parallel()
	g, err := NewGeneric("small", vocab("ab", "abc", " x"), "")
	if err != nil {
		t.Fatal(err)
	}
	// Pieces "abc" (a token) and " abx" (merged by rank: "ab" first; " x" is not adjacent).
	if got, want := g.Encode("abc abx"), []int{257, ' ', 256, 'x'}; !slices.Equal(got, want) {
		t.Errorf("Encode(abc abx) = %v, want %v", got, want)
	}
	if g.Count("") != 0 || g.Name() != "small" {
		t.Errorf("empty text counts %d, name %q", g.Count(""), g.Name())
	}
	// A pattern that splits every character keeps every merge from applying.
	chars, err := NewGeneric("chars", vocab("ab", "abc"), `.`)
	if err != nil {
		t.Fatal(err)
	}
	if n := chars.Count("abcabc"); n != 6 {
		t.Errorf("one piece per character: abcabc counts %d, want 6", n)
	}
	for _, tc := range []struct{ data, want string }{
		{string(vocab()) + "YWI= 256\nYWJj 256\n", "line 258: rank 256 already given on line 257"},
		{string(vocab()) + "YWI= 256\nYWI= 257\n", `line 258: token "YWI=" given twice`},
		{string(vocab()) + "!!! 256\n", "line 257: the token is not base64"},
		{string(vocab()) + "YWI= x\n", `line 257: the rank "x" is not a number`},
		{string(vocab()) + "YWI=\n", "line 257: want a base64 token, a space and a rank"},
		{"YWI= 0\n", "the byte 0x00 is not a token"},
		{"", "no token in the vocabulary"},
	} {
		if _, err := NewGeneric("bad", []byte(tc.data), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
	if _, err := NewGeneric("bad", vocab(), "(?<"); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("a bad pattern: err = %v", err)
	}
}
