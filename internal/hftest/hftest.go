// Package hftest gives tests the Hugging Face tokenizer.json files of Qwen 3 and Llama 3 that
// testdata/hf-tokenizers installs from its lockfile, and the vectors the reference
// implementation made from them. It imports neither the store nor tokencount, so that the
// tests of package tokenizer use it as those of tokencount, memory and cmd/memctl do.
package hftest

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/nodetest"
)

// Dir holds the tokenizer.json files of Qwen 3 and Llama 3 (installed from its lockfile) and
// the vectors the reference implementation made from them (see its PROVENANCE.md).
var Dir = corpus.Testdata("hf-tokenizers")

// Vectors are the parts of vectors.json.gz that the counting tests check: the files and, for
// each variant, the count of every message of the recorded conversations.
type Vectors struct {
	Files map[string]struct {
		Package string `json:"package"`
		Path    string `json:"path"`
		SHA256  string `json:"sha256"`
	} `json:"files"`
	Variants []struct {
		Name     string `json:"name"`
		Messages []struct {
			File   string `json:"file"`
			Counts []int  `json:"counts"`
			Total  int    `json:"total"`
		} `json:"messages"`
	} `json:"variants"`
}

// Decode decodes vectors.json.gz into v: a Vectors, or a type of the parts of the vectors a
// test reads.
func Decode(v any) error {
	f, err := os.Open(filepath.Join(Dir, "vectors.json.gz"))
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	return json.NewDecoder(z).Decode(v)
}

// ReadVectors returns the vectors, decoded once per test binary.
func ReadVectors() (*Vectors, error) { return readVectors() }

var readVectors = sync.OnceValues(func() (*Vectors, error) {
	var v Vectors
	return &v, Decode(&v)
})

// TokenizerFile returns the path of the tokenizer.json named name in the vectors ("qwen3" or
// "llama3"), installed from the lockfile (skipped, saying so, when it cannot be; under CI it
// fails), and its sha256.
func TokenizerFile(t testing.TB, name string) (string, string) {
	t.Helper()
	v, err := ReadVectors()
	if err != nil {
		t.Fatal(err)
	}
	f := v.Files[name]
	pkg := f.Package[:strings.LastIndexByte(f.Package, '@')]
	_, dir := nodetest.Require(t, Dir, pkg)
	return filepath.Join(dir, "node_modules", pkg, f.Path), f.SHA256
}
