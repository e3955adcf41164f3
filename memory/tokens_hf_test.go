package memory_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/nodetest"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// hfDir holds the tokenizer.json files of Qwen 3 and Llama 3 (installed from its lockfile) and
// the vectors the reference implementation made from them (see its PROVENANCE.md).
const hfDir = "../testdata/hf-tokenizers"

// hfMessageVectors are the parts of vectors.json.gz this package checks: the files.
type hfMessageVectors struct {
	Files map[string]struct {
		Package string `json:"package"`
		Path    string `json:"path"`
		SHA256  string `json:"sha256"`
	} `json:"files"`
}

var readHFVectors = sync.OnceValues(func() (*hfMessageVectors, error) {
	f, err := os.Open(filepath.Join(hfDir, "vectors.json.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var v hfMessageVectors
	return &v, json.NewDecoder(z).Decode(&v)
})

// hfTokenizerFile returns the path of the tokenizer.json named name in the vectors ("qwen3" or
// "llama3"), installed from the lockfile (skipped, saying so, when it cannot be; under CI it
// fails), and its sha256.
func hfTokenizerFile(t testing.TB, name string) (string, string) {
	t.Helper()
	v, err := readHFVectors()
	if err != nil {
		t.Fatal(err)
	}
	f := v.Files[name]
	pkg := f.Package[:strings.LastIndexByte(f.Package, '@')]
	_, dir := nodetest.Require(t, hfDir, pkg)
	return filepath.Join(dir, "node_modules", pkg, f.Path), f.SHA256
}

// TestHFFileCounterThreads checks that a thread counted with one tokenizer.json records the
// file's encoding, that the same file counts it again, and that another tokenizer.json, or a
// split pattern given with it, is refused.
func TestHFFileCounterThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	qwen, _ := hfTokenizerFile(t, "qwen3")
	llama, _ := hfTokenizerFile(t, "llama3")
	if _, err := tokencount.NewFileCounter(qwen, `\S+`); err == nil || !strings.Contains(err.Error(), "tokenizer.json") || !strings.Contains(err.Error(), qwen) {
		t.Errorf("a pattern with a tokenizer.json: err = %v, want a refusal naming the file", err)
	}
	fc, err := tokencount.NewFileCounter(qwen, "")
	if err != nil {
		t.Fatal(err)
	}
	s, path := storetest.Open(t)
	if err := s.UseCounter(fc); err != nil {
		t.Fatal(err)
	}
	// Special-token text counts as text: <|im_start|> is not one token.
	msg := chat.TextMessage("user", "<|im_start|>user\n<think>hello</think> world<|im_end|>")
	if _, err := s.Append(ctx, "qwen", []chat.Message{msg}, memory.AppendOptions{Model: "qwen3"}); err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, "qwen")
	if err != nil || th.Encoding != fc.Encoding() || th.ActiveTokens != fc.CountMessages([]chat.Message{msg}) {
		t.Fatalf("thread %+v, %v; want encoding %q and %d tokens", th, err, fc.Encoding(), fc.CountMessages([]chat.Message{msg}))
	}
	if n := fc.CountText("<|im_start|>"); n < 3 {
		t.Errorf("<|im_start|> counts %d tokens, want its text's (at least 3)", n)
	}
	s.Close()
	other, err := tokencount.NewFileCounter(llama, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]tokencount.Counter{"the same file": nil, "Llama 3's file": other} {
		s, err := memory.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			c, _ = tokencount.NewFileCounter(qwen, "")
		}
		if err := s.UseCounter(c); err != nil {
			t.Fatal(err)
		}
		_, err = s.Append(ctx, "qwen", []chat.Message{msg}, memory.AppendOptions{})
		if name == "the same file" && err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name != "the same file" && (err == nil || !strings.Contains(err.Error(), fc.Encoding())) {
			t.Errorf("%s: append to a thread of %s: err = %v, want a refusal naming it", name, fc.Encoding(), err)
		}
		s.Close()
	}
}
