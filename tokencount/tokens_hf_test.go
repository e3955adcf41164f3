package tokencount_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/hftest"
	"github.com/memcascade/memcascade/tokencount"
)

// TestHFFileCounterMessages checks that a counter made from the tokenizer.json of Qwen 3 and of
// Llama 3 counts every message of every recorded conversation, and each conversation, exactly
// as the vectors do: the reference implementation's tokens of each text field, framed as the
// cookbook frames a message (3 per message, 3 per tool call, 1 per name, 3 to prime the reply).
// The chat template's own tokens are not these (a server's count of a request differs by them:
// the calibration of serve absorbs the difference).
func TestHFFileCounterMessages(t *testing.T) {
	t.Parallel()
	v, err := hftest.ReadVectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen3", "llama3"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path, sum := hftest.TokenizerFile(t, name)
			fc, err := tokencount.NewFileCounter(path, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := fc.Load(); err != nil {
				t.Fatal(err)
			}
			if want := tokencount.FileEncodingPrefix + sum[:16]; fc.Encoding() != want {
				t.Errorf("encoding %q, want %q (file: and the file's sha256)", fc.Encoding(), want)
			}
			var want []struct {
				File   string `json:"file"`
				Counts []int  `json:"counts"`
				Total  int    `json:"total"`
			}
			for _, vv := range v.Variants {
				if vv.Name == name {
					want = vv.Messages
				}
			}
			files := corpus.Conversations(t)
			if len(want) != len(files) {
				t.Fatalf("%d conversations in the vectors, %d in testdata", len(want), len(files))
			}
			messages := 0
			for i, f := range files {
				w := want[i]
				if filepath.Base(f) != w.File {
					t.Fatalf("conversation %d is %s, the vectors' %s", i, filepath.Base(f), w.File)
				}
				conv := corpus.ReadMessagesFile(t, f)
				if len(conv) != len(w.Counts) {
					t.Fatalf("%s: %d messages, %d in the vectors", w.File, len(conv), len(w.Counts))
				}
				for j, m := range conv {
					if got := fc.CountMessage(m); got != w.Counts[j] {
						t.Errorf("%s message %d (%s): %d tokens, want %d", w.File, j, m.Role, got, w.Counts[j])
					}
					messages++
				}
				if got := fc.CountMessages(conv); got != w.Total {
					t.Errorf("%s: %d tokens, want %d", w.File, got, w.Total)
				}
			}
			if messages < 100 {
				t.Fatalf("only %d messages compared", messages)
			}
		})
	}
}

// TestHFFileCounterErrors checks that a tokenizer.json of an unsupported model is refused when
// it is loaded, naming the file and the component, and that its encoding name is the SHA-256
// of the file alone.
func TestHFFileCounterErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ file, want string }{
		{`{"model": {"type": "WordPiece", "vocab": {}}}`, `model: type "WordPiece" is not supported`},
		{`{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Metaspace"}}`, `pre_tokenizer: type "Metaspace" is not supported`},
		{`{"model": {"type": "BPE", "vocab": {}, "merges": []}, "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "ByteLevel"}}`, `normalizer: type "Lowercase" is not supported`},
		{` {"model": [`, "not a tokenizer.json"},
	} {
		path := filepath.Join(dir, "tokenizer.json")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := tokencount.NewFileCounter(path, "")
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(tc.file))
		if want := tokencount.FileEncodingPrefix + hex.EncodeToString(sum[:])[:16]; c.Encoding() != want {
			t.Errorf("encoding %q, want %q", c.Encoding(), want)
		}
		if err := c.Load(); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %s and %q", tc.file, err, path, tc.want)
		}
	}
}
