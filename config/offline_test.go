package config_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
)

// TestOfflineRungIsLast: a cascade that lists only servers ends with the built-in extractive
// rung, so compaction works when they are all down; offline: false keeps the list as written,
// and a cascade that has an extractive provider gets no second one.
func TestOfflineRungIsLast(t *testing.T) {
	h, err := db.OpenHandle(context.Background(), filepath.Join(t.TempDir(), "m.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tc := range []struct {
		yaml string
		want []string // names of the entries, in order
	}{
		{"cascade:\n  - name: local\n    model: qwen3\n", []string{"local", "offline"}},
		{"cascade:\n  - name: offline\n    model: qwen3\n", []string{"offline", "offline-2"}},
		{"offline: true\ncascade:\n  - name: local\n    model: qwen3\n", []string{"local", "offline"}},
		{"offline: false\ncascade:\n  - name: local\n    model: qwen3\n", []string{"local"}},
		{"cascade:\n  - name: x\n    type: extractive\n  - name: local\n    model: qwen3\n", []string{"x", "local"}},
	} {
		c, err := config.Parse([]byte(tc.yaml), "c.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		casc, err := c.NewCascade(h, cascade.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range casc.Entries {
			got = append(got, e.Name)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%q: entries %q, want %q", tc.yaml, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%q: entries %q, want %q", tc.yaml, got, tc.want)
			}
		}
		if last := casc.Entries[len(casc.Entries)-1]; tc.want[len(tc.want)-1] != "local" && last.Name != "local" && !last.Offline {
			t.Errorf("%q: the last rung %q is not offline", tc.yaml, last.Name)
		}
	}
	if _, err := config.Parse([]byte("offline: 3\n"), "c.yaml"); err == nil || err.Error() != `c.yaml:1: offline: expected true or false, found "3"` {
		t.Errorf("offline: 3: %v", err)
	}
}
