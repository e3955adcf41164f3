package reliability

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memcascade/memcascade/memory"
)

// TestOpenDoesNotWaitForWriter: opening an up-to-date database takes no write lock, so a
// reader (memctl export, threads, search) is not held up by a long write in another process
// (an import of a large file holds the write lock for seconds), even when a compaction of a
// live process is running.
func TestOpenDoesNotWaitForWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	writer, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Append(ctx, "t", []memory.Message{memory.TextMessage("user", "hello")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if _, err := writer.DB().ExecContext(ctx, `INSERT INTO compactions (thread_id, status, reason, last_seq,
		token_limit, tokens_before, messages_before, owner_host, owner_pid, created_at, updated_at)
		VALUES ('t', 'running', 'forced', 1, 1000, 10, 1, ?, ?, 0, 0)`, host, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	// A write transaction stays open, as during a long import.
	tx, err := writer.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE threads SET updated_at = updated_at + 1"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	reader, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatalf("open while another connection writes: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	}
	defer reader.Close()
	a, err := reader.Active(ctx, "t")
	if err != nil || len(a.Entries) != 1 {
		t.Fatalf("active context while another connection writes: %d entries, %v", len(a.Entries), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("open and read took %s while another connection wrote", d.Round(time.Millisecond))
	}
}
