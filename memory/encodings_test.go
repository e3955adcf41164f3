package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/tokentest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestFileEncodingRecordedAndRefused checks that a thread counted with a vocabulary file
// records the file's encoding name, that a store given the same file counts it again, and
// that a store given another file (or none) refuses to count it.
func TestFileEncodingRecordedAndRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vocab := tokentest.VocabularyFile(t, tokencount.EncodingCL100k)
	fc, err := tokencount.NewFileCounter(vocab, "")
	if err != nil {
		t.Fatal(err)
	}
	s, path := storetest.OpenWith(t, memory.Options{Counter: fc})
	msg := chat.TextMessage("user", "hello world")
	res, err := s.Append(ctx, "llama", []chat.Message{msg}, memory.AppendOptions{Model: "llama3"})
	if err != nil || res.Warning != "" {
		t.Fatalf("append: %+v, %v", res, err)
	}
	th, err := s.Thread(ctx, "llama")
	if err != nil || th.Encoding != fc.Encoding() {
		t.Fatalf("thread encoding %q, %v; want %q", th.Encoding, err, fc.Encoding())
	}
	if th.ActiveTokens != fc.CountMessages([]chat.Message{msg}) {
		t.Errorf("active tokens %d, want %d", th.ActiveTokens, fc.CountMessages([]chat.Message{msg}))
	}
	s.Close()

	reopen := func(c tokencount.Counter) *memory.Store {
		s, err := memory.Open(ctx, path, memory.OpenOptions{Options: memory.Options{Counter: c}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	same, err := tokencount.NewFileCounter(vocab, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reopen(same).Append(ctx, "llama", []chat.Message{msg}, memory.AppendOptions{}); err != nil {
		t.Errorf("the same file: %v", err)
	}
	// Another pattern over the same vocabulary is another tokenizer.
	other, err := tokencount.NewFileCounter(vocab, `\S+|\s+`)
	if err != nil {
		t.Fatal(err)
	}
	if other.Encoding() == fc.Encoding() {
		t.Fatalf("another pattern has the same encoding name %q", other.Encoding())
	}
	for name, c := range map[string]tokencount.Counter{"another pattern": other, "no file": nil, "a built-in encoding": tokentest.Counter(t, tokencount.EncodingCL100k)} {
		_, err := reopen(c).Append(ctx, "llama", []chat.Message{msg}, memory.AppendOptions{})
		if err == nil || !strings.Contains(err.Error(), fc.Encoding()) || !strings.Contains(err.Error(), "vocabulary file") {
			t.Errorf("%s: append to a thread of %s: err = %v, want a refusal naming it", name, fc.Encoding(), err)
		}
	}
}

// wordCounter is a host's own tokenizer: one token per word, 2 per message.
type wordCounter struct{}

func (wordCounter) Encoding() string                  { return "words-v1" }
func (wordCounter) CountText(s string) int            { return len(strings.Fields(s)) }
func (w wordCounter) CountMessage(m chat.Message) int { return 2 + w.CountText(m.Text()) }
func (w wordCounter) CountMessages(ms []chat.Message) int {
	n := 0
	for _, m := range ms {
		n += w.CountMessage(m)
	}
	return n
}
func (wordCounter) CountTools([]chat.Tool) int { return 0 }

// TestHostTokenCounter checks that a host's tokencount.Counter (Options.Counter) counts the
// threads the store creates, and that a foreign counter cannot take a built-in encoding's name.
func TestHostTokenCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := storetest.OpenWith(t, memory.Options{Counter: wordCounter{}})
	msgs := []chat.Message{chat.TextMessage("user", "one two three"), chat.TextMessage("assistant", "four five")}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	// The store adds the reply priming to the stored counts of the messages.
	if want := 5 + 4 + tokencount.ReplyPriming; th.Encoding != "words-v1" || th.ActiveTokens != want {
		t.Errorf("thread %q with %d active tokens, want words-v1 with %d", th.Encoding, th.ActiveTokens, want)
	}
	if s, err := memory.Open(ctx, path, memory.OpenOptions{Options: memory.Options{Counter: impostor{}}}); err == nil {
		s.Close()
		t.Error("a host counter named o200k_base was accepted")
	}
}

type impostor struct{ wordCounter }

func (impostor) Encoding() string { return tokencount.EncodingO200k }
