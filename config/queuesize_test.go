package config_test

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
)

// TestQueueSize: compaction.queue_size is 3 by default, read from the file, and a value under
// 1 or over 64 is refused naming the key and its line.
func TestQueueSize(t *testing.T) {
	if got := config.Default().Settings().QueueSize; got != 3 {
		t.Errorf("default queue_size %d, want 3", got)
	}
	cfg, err := config.Parse([]byte("compaction:\n  strategy: queue\n  queue_size: 5\n"), "c.yaml")
	if err != nil || cfg.Settings().QueueSize != 5 || cfg.Settings().Strategy != "queue" {
		t.Fatalf("queue_size 5: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"compaction:\n  queue_size: 0\n", "c.yaml:2: compaction.queue_size: 0 must be at least 1"},
		{"compaction:\n  queue_size: -2\n", "c.yaml:2: compaction.queue_size: -2 must be at least 1"},
		{"compaction:\n  queue_size: 65\n", "c.yaml:2: compaction.queue_size: 65 is over the largest supported, 64"},
		{"compaction:\n  queue_size: three\n", "c.yaml:2: compaction.queue_size"},
	} {
		if _, err := config.Parse([]byte(tc.yaml), "c.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
