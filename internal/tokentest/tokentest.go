// Package tokentest gives the tests of tokencount and of the store the counters they compare
// with: the built-in counter of a built-in encoding, and a built-in encoding's vocabulary
// written to a file of its own. It imports no store.
package tokentest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pkoukk/tiktoken-go-loader/assets"

	"github.com/memcascade/memcascade/tokencount"
)

// Counter is the built-in counter of a built-in encoding.
func Counter(t testing.TB, encoding string) *tokencount.BPECounter {
	t.Helper()
	c, err := tokencount.NewCounter(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// VocabularyFile writes a built-in encoding's vocabulary, from the offline loader's embedded
// files, to a file of its own, as a user would give it to encoding_file.
func VocabularyFile(t testing.TB, name string) string {
	t.Helper()
	data, err := assets.Assets.ReadFile(name + ".tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".tiktoken")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
