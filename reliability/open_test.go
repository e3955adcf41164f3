package reliability

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestOpenDoesNotWaitForWriter: opening an up-to-date database takes no write lock, so a
// reader (memctl export, threads, search) is not held up by a long write in another
// connection (an import of a large file holds the write lock for seconds), even while a
// compaction of a live process is running.
func TestOpenDoesNotWaitForWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	writer, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	msgs := []chat.Message{chat.TextMessage("system", "be brief")}
	for range 20 {
		msgs = append(msgs, chat.TextMessage("user", "a question about the weather and the sea"), chat.TextMessage("assistant", "an answer about both"))
	}
	if _, err := writer.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}

	// A compaction of this (live) process, running: its provider waits until released.
	release := make(chan struct{})
	summarizing := make(chan struct{})
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		close(summarizing)
		<-release
		return llm.Response{Text: "A summary.", FinishReason: "stop"}, nil
	}}
	casc := cascade.New(writer.DB(), cascade.Entry{Name: "slow", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	compacted := make(chan error, 1)
	go func() {
		_, err := compact.New(writer, casc, compact.Settings{TokenLimit: 300}).Compact(ctx, "t", compact.Options{Force: true})
		compacted <- err
	}()
	<-summarizing

	// An import that holds the write lock: its input stops after the first line.
	pr, pw := io.Pipe()
	imported := make(chan error, 1)
	go func() {
		_, err := writer.Import(ctx, "other", pr, memory.AppendOptions{})
		imported <- err
	}()
	pw.Write([]byte(`{"role":"user","content":"first line"}` + "\n"))
	time.Sleep(100 * time.Millisecond) // the import is inside its write transaction now

	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	reader, err := memory.Open(rctx, path)
	if err != nil {
		t.Fatalf("open while another connection writes: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	}
	defer reader.Close()
	a, err := reader.Active(rctx, "t")
	if err != nil || len(a.Entries) != len(msgs) {
		t.Fatalf("active context while another connection writes: %d entries, %v", len(a.Entries), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("open and read took %s while another connection wrote", d.Round(time.Millisecond))
	}

	pw.Close()
	close(release)
	if err := <-imported; err != nil {
		t.Fatalf("the import: %v", err)
	}
	if err := <-compacted; err != nil {
		t.Fatalf("the compaction: %v", err)
	}
}
