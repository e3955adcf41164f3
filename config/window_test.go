package config_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
)

// TestContextWindowAuto: `context_window: auto` parses, renders back as auto (YAML and
// JSON), builds an entry whose window is read from its server, and carries concurrency.
func TestContextWindowAuto(t *testing.T) {
	src := "cascade:\n  - name: local\n    context_window: auto\n    concurrency: 3\n    model: m\n  - name: offline\n    type: extractive\n"
	c, err := config.Parse([]byte(src), "memctl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Cascade[0]; p.ContextWindow != config.WindowAuto || p.Concurrency != 3 {
		t.Fatalf("provider = %+v, want context_window auto, concurrency 3", p)
	}
	if c.Cascade[1].ContextWindow != 8192 || c.Cascade[1].Concurrency != 1 {
		t.Errorf("defaults = %+v, want 8192 and concurrency 1", c.Cascade[1])
	}
	out := string(c.YAML())
	if !strings.Contains(out, "context_window: auto\n") || !strings.Contains(out, "concurrency: 3\n") {
		t.Errorf("rendered:\n%s", out)
	}
	back, err := config.Parse([]byte(out), "rendered.yaml")
	if err != nil || back.Cascade[0].ContextWindow != config.WindowAuto {
		t.Fatalf("round trip: %+v, %v", back.Cascade, err)
	}
	js, _ := json.Marshal(c.Cascade[0])
	if !strings.Contains(string(js), `"context_window":"auto"`) || !strings.Contains(string(js), `"concurrency":3`) {
		t.Errorf("JSON: %s", js)
	}

	sqldb, err := db.OpenHandle(context.Background(), filepath.Join(t.TempDir(), "m.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	casc, err := c.NewCascade(sqldb, cascade.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := casc.Entries[0]; !e.AutoWindow || e.ContextWindow != 0 || e.Concurrency != 3 {
		t.Errorf("entry = %+v, want AutoWindow, no fixed window, concurrency 3", e)
	}
	if e := casc.Entries[1]; e.AutoWindow || e.Concurrency != 1 {
		t.Errorf("offline entry = %+v", e)
	}
}

// TestContextWindowAutoErrors: auto on an extractive provider, a word that is not auto, and
// a concurrency below 1 are errors naming the key and line.
func TestContextWindowAutoErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"cascade:\n  - name: x\n    type: extractive\n    context_window: auto\n",
			"memctl.yaml:4: cascade[0].context_window: auto reads the window from a server: type extractive has none"},
		{"cascade:\n  - name: x\n    context_window: automatic\n    model: m\n",
			`memctl.yaml:3: cascade[0].context_window: "automatic" is not an integer (a number of tokens, or auto)`},
		{"cascade:\n  - name: x\n    context_window: -1\n    model: m\n",
			"memctl.yaml:3: cascade[0].context_window: -1 must be at least 1"},
		{"cascade:\n  - name: x\n    concurrency: 0\n    model: m\n",
			"memctl.yaml:3: cascade[0].concurrency: 0 must be at least 1"},
	} {
		_, err := config.Parse([]byte(tc.src), "memctl.yaml")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}
