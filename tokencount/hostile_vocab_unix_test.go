//go:build unix

package tokencount_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memcascade/memcascade/tokencount"
)

// TestNewFileCounterRefusesNonRegularFile: encoding_file naming a FIFO or a device is bad
// input and must get a clear error, not an unbounded read. Seen with memctl:
// `encoding_file: /dev/zero` in the config made `memctl tokens FILE` grow to 24 GB resident
// (os.ReadFile of an endless file) until the kernel killed it; SIGTERM did not stop it.
// The FIFO here gives 8 MiB and closes, so the test ends whatever NewFileCounter does.
func TestNewFileCounterRefusesNonRegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "vocab.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		chunk := []byte(strings.Repeat("A", 1<<20))
		for range 8 {
			if _, err := f.Write(chunk); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// Release the writer when NewFileCounter never opened the FIFO: a reader appears
		// and leaves, so its open returns and its first write fails (EPIPE).
		for {
			select {
			case <-done:
				return
			default:
			}
			if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				r.Close()
			}
		}
	})
	c, err := tokencount.NewFileCounter(fifo, "")
	if err == nil {
		t.Fatalf("NewFileCounter(a FIFO) = %v, nil: want an error saying the vocabulary is not a regular file", c.Encoding())
	}
	if !strings.Contains(err.Error(), fifo) && !strings.Contains(err.Error(), "vocab.fifo") {
		t.Errorf("error %q does not name the file", err)
	}
}
