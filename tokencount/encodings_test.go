package tokencount_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/tokentest"
	"github.com/memcascade/memcascade/tokencount"
)

// TestFileEncodingMatchesCL100k checks that cl100k_base's own vocabulary, given as a file and
// encoded by tiktoken-go with the default pattern, counts every message of every recorded
// conversation exactly as the built-in cl100k_base does.
func TestFileEncodingMatchesCL100k(t *testing.T) {
	t.Parallel()
	fc, err := tokencount.NewFileCounter(tokentest.VocabularyFile(t, tokencount.EncodingCL100k), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fc.Encoding(), tokencount.FileEncodingPrefix) || len(fc.Encoding()) != len(tokencount.FileEncodingPrefix)+16 {
		t.Errorf("file encoding name %q, want file: and 16 hex digits", fc.Encoding())
	}
	builtin := tokentest.Counter(t, tokencount.EncodingCL100k)
	messages := 0
	for i, conv := range corpus.RecordedMessages(t) {
		for j, m := range conv {
			if got, want := fc.CountMessage(m), builtin.CountMessage(m); got != want {
				t.Errorf("conversation %d message %d: the cl100k file counts %d, the built-in cl100k %d", i, j, got, want)
			}
			messages++
		}
		if got, want := fc.CountMessages(conv), builtin.CountMessages(conv); got != want {
			t.Errorf("conversation %d: the cl100k file counts %d, the built-in cl100k %d", i, got, want)
		}
	}
	if messages < 100 {
		t.Fatalf("only %d recorded messages compared", messages)
	}
}

var referenceLoader sync.Once

// TestP50kR50kMatchTiktokenGo checks that p50k_base and r50k_base count every text of the
// recorded conversations as tiktoken-go's own encodings do.
func TestP50kR50kMatchTiktokenGo(t *testing.T) {
	t.Parallel()
	referenceLoader.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	var texts []string
	for _, conv := range corpus.RecordedMessages(t) {
		for _, m := range conv {
			texts = append(texts, m.Text(), m.Role)
			for _, tc := range m.ToolCalls {
				texts = append(texts, tc.Function.Name, tc.Function.Arguments)
			}
		}
	}
	texts = append(texts, "<|endoftext|> is text here", "naïve café 日本語 😀 \xff\xfe", "  \n\n\t x")
	for _, enc := range []string{tokencount.EncodingP50k, tokencount.EncodingR50k} {
		ref, err := tiktoken.GetEncoding(enc)
		if err != nil {
			t.Fatal(err)
		}
		c := tokentest.Counter(t, enc)
		total := 0
		for _, s := range texts {
			want := len(ref.EncodeOrdinary(s))
			if got := c.CountText(s); got != want {
				t.Errorf("%s: CountText(%.40q) = %d, tiktoken-go %d", enc, s, got, want)
			}
			total += want
		}
		if c.CountText("hello world") != 2 || total == 0 {
			t.Errorf("%s: hello world counts %d", enc, c.CountText("hello world"))
		}
	}
}

// TestNewFileCounterErrors checks that a bad vocabulary file is refused with the file and line
// named, when it is loaded.
func TestNewFileCounterErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := tokencount.NewFileCounter(filepath.Join(dir, "missing.tiktoken"), ""); err == nil {
		t.Error("a missing file: no error")
	}
	bad := filepath.Join(dir, "bad.tiktoken")
	os.WriteFile(bad, []byte("IQ== 0\nnot-base64! 1\n"), 0o600)
	c, err := tokencount.NewFileCounter(bad, "")
	if err == nil {
		err = c.Load()
	}
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a malformed file: err = %v, want one naming %s and line 2", err, bad)
	}
}
