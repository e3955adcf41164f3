package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/hftest"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestHFFileCounterThreads checks that a thread counted with one tokenizer.json records the
// file's encoding, that the same file counts it again, and that another tokenizer.json, or a
// split pattern given with it, is refused.
func TestHFFileCounterThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	qwen, _ := hftest.TokenizerFile(t, "qwen3")
	llama, _ := hftest.TokenizerFile(t, "llama3")
	if _, err := tokencount.NewFileCounter(qwen, `\S+`); err == nil || !strings.Contains(err.Error(), "tokenizer.json") || !strings.Contains(err.Error(), qwen) {
		t.Errorf("a pattern with a tokenizer.json: err = %v, want a refusal naming the file", err)
	}
	fc, err := tokencount.NewFileCounter(qwen, "")
	if err != nil {
		t.Fatal(err)
	}
	s, path := storetest.OpenWith(t, memory.Options{Counter: fc})
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
		if c == nil {
			c, _ = tokencount.NewFileCounter(qwen, "")
		}
		s, err := memory.Open(ctx, path, memory.OpenOptions{Options: memory.Options{Counter: c}})
		if err != nil {
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
