package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
)

// TestBackupWhileWriting: a backup taken while another store on the same file keeps appending
// passes the integrity check and holds every thread committed before it started, message for
// message; the file is 0600, and an existing destination is refused and left as it was.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.db")
	reader, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	var mu sync.Mutex
	committed := map[string]int{} // thread -> messages, recorded after each commit returned
	stop := make(chan struct{})
	done := make(chan error, 1)
	enough := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			id := fmt.Sprintf("w%04d", i)
			msgs := []chat.Message{chat.TextMessage(chat.RoleUser, "question "+id), chat.TextMessage(chat.RoleAssistant, strings.Repeat("answer ", 50))}
			if _, err := writer.Append(ctx, id, msgs, AppendOptions{}); err != nil {
				done <- err
				return
			}
			mu.Lock()
			committed[id] = len(msgs)
			if len(committed) == 20 {
				close(enough)
			}
			mu.Unlock()
		}
	}()
	<-enough
	mu.Lock()
	before := make(map[string]int, len(committed))
	for k, v := range committed {
		before[k] = v
	}
	mu.Unlock()
	dest := filepath.Join(dir, "copy'); DROP TABLE threads; --.db")
	berr := reader.DB().Backup(ctx, dest)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if berr != nil {
		t.Fatal(berr)
	}
	st, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("backup mode %v, want 0600", st.Mode().Perm())
	}
	cp, err := Open(ctx, dest, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if err := cp.DB().Check(ctx); err != nil {
		t.Fatalf("the backup fails its check: %v", err)
	}
	for id, n := range before {
		h, err := cp.History(ctx, id)
		if err != nil || len(h) != n {
			t.Fatalf("thread %s in the backup: %d messages (%v), want %d", id, len(h), err, n)
		}
	}
	if err := reader.DB().Check(ctx); err != nil {
		t.Fatal(err)
	}
	cp.Close()
	old, _ := os.ReadFile(dest)
	if err := reader.DB().Backup(ctx, dest); !errors.Is(err, db.ErrBackupExists) {
		t.Fatalf("backup over an existing file: %v, want db.ErrBackupExists", err)
	}
	if now, _ := os.ReadFile(dest); !bytes.Equal(now, old) {
		t.Fatal("a refused backup changed the existing file")
	}
}

// TestRecoveredCompactionIsLogged: the open that marks an interrupted compaction failed logs
// it at warn with its thread and id.
func TestRecoveredCompactionIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.Name(t, "m.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id := runningRow(t, s, "host-x 9a8b-boot pid:[4026531836]", 1, time.Now().Add(-time.Second))
	s.Close()
	var buf bytes.Buffer
	s, err = Open(ctx, path, OpenOptions{Options: Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := fmt.Sprintf(`level=WARN msg="interrupted compaction marked failed" thread=t compaction_id=%d outcome=failed`, id)
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("log %q lacks %q", buf.String(), want)
	}
	buf.Reset()
	s2, err := Open(ctx, path, OpenOptions{Options: Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if buf.Len() != 0 {
		t.Fatalf("a second open logged %q", buf.String())
	}
}
